"""One child run: what it logs (:class:`ChildRun`) and the digest of its numbers
(:func:`child_digest`); no mlflow here.

The digest is what lets a sync share a child with an earlier state instead of logging it again
(:mod:`faircode.record._shared`): two children with the same key, the same metrics and the same
tags hold the same numbers.  Deliberately left out are the ``state.*`` tags (the identity of the
code and params the audit ran under, which a sweep value changes for every audit, not only for
those whose numbers it changes) and the params (each child carries the whole config as params,
``decision_threshold`` among them; the cell's identity is in the key and in the tags).  A metric
enters as its exact ``repr``: a change in the last digit is a different child.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ChildRun", "child_digest"]

_DIGEST_PREFIX = b"faircode-child-v1\0"
_IDENTITY_TAGS = "state."


@dataclass(frozen=True, slots=True)
class ChildRun:
    """Everything one child run logs: identity, tags, params and metrics."""

    key: str
    audit: str
    name: str
    tags: Mapping[str, str]
    params: Mapping[str, str]
    metrics: Mapping[str, float]


def child_digest(child: ChildRun) -> str:
    """sha256 of a child's key, metrics (exact reprs) and tags without the ``state.*`` ones.

    Params are not part of it (module docstring): equal digests mean equal numbers, whatever
    state or config they were logged under.
    """
    content = {"key": child.key,
               "metrics": {k: repr(float(v)) for k, v in child.metrics.items()},
               "tags": {k: v for k, v in child.tags.items() if not k.startswith(_IDENTITY_TAGS)}}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(_DIGEST_PREFIX + text.encode()).hexdigest()
