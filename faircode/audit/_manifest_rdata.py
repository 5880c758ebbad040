"""Parsing ``dataset.object``: the data frame an R data file's manifest reads.

Private: :func:`faircode.audit._manifest_parse._parse_dataset` calls :func:`parse_r_object`.  A
``dataset.path`` ending in ``.rda`` or ``.RData`` (any case) is R data (R's ``save()`` format,
read by :mod:`faircode.audit._data_rdata`) and must name the object to read; any other file is
CSV and names none.  CSV reading options (``dataset.read``) mean nothing for R data and are
refused with it.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from faircode.core.errors import ManifestError
from faircode.core.schema import Checker

__all__ = ["R_SUFFIXES", "parse_r_object"]

R_SUFFIXES = (".rda", ".rdata")
"""The suffixes (lower-cased) of an R data file."""


def parse_r_object(c: Checker, data: dict[str, Any], declared: str) -> str | None:
    """The ``object`` of the ``dataset`` mapping ``data`` whose path is ``declared``."""
    r_file = PurePosixPath(declared).suffix.lower() in R_SUFFIXES
    r_object = c.optional_string(data.get("object"), "dataset.object")
    if r_file and r_object is None:
        raise ManifestError(f"{c.file}: dataset.object: expected the name of the R object to "
                            "read (a data frame) for an .rda/.RData file, got nothing")
    if not r_file and r_object is not None:
        raise c.fail("dataset.object", "no object for a file that is not .rda/.RData",
                     r_object)
    if r_file and data.get("read") is not None:
        raise c.fail("dataset.read", "no CSV reading options for an R data file", data["read"])
    return r_object
