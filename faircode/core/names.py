"""Safe names: every audit, system and model name that becomes a folder or a command-line word.

An audit's name is a folder (``audits/<name>/``, ``data/raw/<name>/``, ``results/<name>/``) and
a word of a shell command (every ``cmd:`` of ``dvc.yaml`` interpolates it); a system's or a
model's name is a row label and an MLflow run name.  :func:`check_name` is applied wherever such
a name enters -- a manifest's ``name`` and ``system.name``, ``params.yaml``'s ``audits``, a DVC
stage's argument, ``faircode audit --name`` -- so no name can leave its folder (``..``, ``/``)
or run a command (``;``, ``$(...)``, a quote, a space).

Design decisions
----------------
* **One pattern, a positive list**: a letter or digit, then up to 99 letters, digits, ``_``,
  ``.`` or ``-`` (:data:`SAFE_NAME`).  No character a POSIX shell treats specially, no path
  separator, never ``.`` or ``..`` (the first character is alphanumeric), at most 100
  characters.  ASCII only: a folder name must mean the same on every file system.
* The error is the one-line ``<where>: expected ..., got <value> (<type>)`` form of
  :mod:`faircode.core.errors`; its class is the caller's (a manifest's name is a
  :class:`~faircode.core.errors.ManifestError`).
"""

from __future__ import annotations

import re

from faircode.core.errors import ConfigError, config_error

__all__ = ["SAFE_NAME", "SAFE_NAME_TEXT", "check_name", "is_safe_name"]

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
"""A folder- and shell-safe name (matched whole, :func:`is_safe_name`)."""
SAFE_NAME_TEXT = ("a folder- and shell-safe name (a letter or digit, then letters, digits, '_', "
                  "'.' or '-'; at most 100 characters)")
"""What every error about an unsafe name says was expected."""


def is_safe_name(value: object) -> bool:
    """Whether ``value`` is a string matching :data:`SAFE_NAME` whole."""
    return isinstance(value, str) and SAFE_NAME.fullmatch(value) is not None


def check_name(value: object, *, where: str, cls: type[ConfigError] = ConfigError) -> str:
    """Return ``value`` if it is a safe name; else raise ``cls`` naming ``where`` and the value."""
    if not is_safe_name(value):
        raise config_error(where, SAFE_NAME_TEXT, value, cls=cls)
    assert isinstance(value, str)
    return value
