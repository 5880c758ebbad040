"""Parsing ``dataset.object`` and ``dataset.companions``: what an R data manifest reads.

Private: :func:`faircode.audit._manifest_parse._parse_dataset` calls :func:`parse_r_object`.  A
``dataset.path`` ending in ``.rda`` or ``.RData`` (any case) is R data (R's ``save()`` format,
read by :mod:`faircode.audit._data_rdata`), one ending in ``.rdb`` an R lazy-load database (an R
package's ``Rdata.rdb``, read by :mod:`faircode.audit._data_rdb`); either must name the object
to read, and any other file is CSV and names none.  CSV reading options (``dataset.read``) mean
nothing for R data and are refused with it.

A lazy-load database is more than one file: ``dataset.companions`` maps each other file of it,
beside ``dataset.path``, to its sha256 (``Rdata.rdx: <sha256>``); the index ``<base>.rdx`` must
be among them.  Each is fetched and verified with the raw file
(:func:`faircode.audit.fetch.fetch`) and verified again when the audit is loaded.  With a
``dataset.sha256`` every companion's digest is required too: the manifest then pins every byte
that is read.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from faircode.audit._manifest_types import _SHA_RE, Companion
from faircode.core.errors import ManifestError
from faircode.core.names import SAFE_NAME_TEXT, is_safe_name
from faircode.core.schema import Checker

__all__ = ["DATABASE_SUFFIX", "R_SUFFIXES", "parse_companions", "parse_r_object"]

R_SUFFIXES = (".rda", ".rdata")
"""The suffixes (lower-cased) of an R data file (``save()``)."""
DATABASE_SUFFIX = ".rdb"
"""The suffix (lower-cased) of an R lazy-load database; its index is ``<base>.rdx`` beside it."""

def parse_r_object(c: Checker, data: dict[str, Any], declared: str) -> str | None:
    """The ``object`` of the ``dataset`` mapping ``data`` whose path is ``declared``."""
    suffix = PurePosixPath(declared).suffix.lower()
    r_file = suffix in (*R_SUFFIXES, DATABASE_SUFFIX)
    r_object = c.optional_string(data.get("object"), "dataset.object")
    if r_file and r_object is None:
        raise ManifestError(f"{c.file}: dataset.object: expected the name of the R object to "
                            "read (a data frame) for an .rda/.RData file or an .rdb database, "
                            "got nothing")
    if not r_file and r_object is not None:
        raise c.fail("dataset.object", "no object for a file that is not .rda/.RData/.rdb",
                     r_object)
    if r_file and data.get("read") is not None:
        raise c.fail("dataset.read", "no CSV reading options for an R data file", data["read"])
    return r_object


def parse_companions(c: Checker, data: dict[str, Any], path: Path) -> tuple[Companion, ...]:
    """``dataset.companions`` of the raw file ``path`` (resolved): the other files of its
    lazy-load database, each a file name beside it mapped to its sha256 (or null)."""
    raw = data.get("companions")
    database = path.suffix.lower() == DATABASE_SUFFIX
    if raw is None and not database:
        return ()
    if not database:
        raise c.fail("dataset.companions", "no companion files for a file that is not an "
                     ".rdb database", raw)
    index = path.with_suffix(".rdx").name
    if not isinstance(raw, dict) or index not in raw:
        raise c.fail("dataset.companions", f"a mapping naming {index} (the database's index) "
                     "and any other file of it, each to its sha256", raw)
    out = []
    for name, sha in raw.items():
        where = f"dataset.companions.{name}"
        if not isinstance(name, str) or not is_safe_name(name) or name == path.name:
            raise c.fail("dataset.companions", f"file names beside {path.name} ({SAFE_NAME_TEXT})",
                         name)
        if sha is None and data.get("sha256") is not None:
            raise c.fail(where, "its sha256 (dataset.sha256 is declared: every file of the "
                         "database is pinned)", sha)
        if sha is not None and (not isinstance(sha, str) or not _SHA_RE.match(sha)):
            raise c.fail(where, "64 lowercase hex digits", sha)
        out.append(Companion(path.parent / name, sha))
    return tuple(out)
