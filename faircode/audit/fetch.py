"""Verified fetching of an audit's raw file: keep, copy from a mirror, or download — never invent.

For one manifest :func:`fetch` tries, in order:

1. the file already at ``dataset.path`` — kept when its sha256 matches (or no digest is declared);
2. ``<mirror>/<audit name>/<file name>`` in the first of the given mirror directories that holds
   it (several mirrors: e.g. the shipped audits' and the extra datasets' folders); a manifest's
   ``dataset.mirror`` names another folder than the audit's name (``resume_names`` for
   ``resume_callbacks``);
3. ``dataset.source.url`` — streamed (with a progress bar) within a deadline and a size cap,
   extracting ``source.member`` when the URL is a zip archive
   (:mod:`faircode.audit._download`: partial files never stay behind).

Design decisions
----------------
* **Verify, then move.**  Bytes are written to a temporary file in the target directory while
  being hashed; only a file whose digest matches the manifest is moved into place with
  :func:`os.replace` (atomic on one file system).  A mismatch keeps nothing and raises
  :class:`~faircode.core.errors.ChecksumError` naming the file, the expected and the actual digest.
* **Unavailable is a status, not a fallback.**  With no copy, no URL or no network the audit is
  reported by :class:`~faircode.core.errors.DataUnavailableError` whose message is
  ``<audit>: dataset unavailable: <instructions>`` — data is never synthesised.
* **A wrong copy is never "unavailable".**  A file at ``dataset.path`` whose digest differs, with
  no mirror copy and no working download to replace it, is a
  :class:`~faircode.core.errors.ChecksumError` (exit 2; the fetch stage fails, so DVC caches
  nothing and writes no ``unavailable.json``).  The file itself is left where it is — faircode only
  ever replaces a user's file with a verified copy; deleting it could lose the only evidence of
  what went wrong — and every reader refuses it (:func:`faircode.audit.data.load_audit` checks the
  digest).
* A manifest without ``sha256`` still fetches; its file's digest is reported (``checked=False``).
* ``urllib.request`` only (no new dependency); the library reads no environment variable — the
  CLI resolves ``--mirror`` (repeatable) and ``FAIRCODE_DATA_MIRROR`` (``os.pathsep``-separated)
  into the explicit ``mirrors`` tuple.
* **A lazy-load database is fetched whole**: each of ``dataset.companions`` (the ``.rdx`` index
  beside an ``.rdb``) is kept, copied and verified as the raw file is, from the same mirror
  folder; :func:`check_companions` verifies them again where the file is read.
* **The first mirror holding the file wins**, even if its copy fails verification: a wrong copy
  is an error to fix, not something to paper over with another folder's bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol

from faircode.audit._download import (
    DEFAULT_MAX_BYTES,
    Budget,
    NoDownload,
    copy_hashing,
    download,
    remove_stale,
    staging,
)
from faircode.audit.manifest import DatasetSpec
from faircode.core.digests import sha256_file
from faircode.core.errors import ChecksumError, DataError, DataUnavailableError
from faircode.core.files import open_regular, user_mode


class Fetchable(Protocol):
    """What fetching reads of a manifest (a grid audit's or a text audit's): its name and its
    ``dataset`` block."""

    @property
    def name(self) -> str: ...

    @property
    def dataset(self) -> DatasetSpec: ...

__all__ = [
    "MIRROR_ENV",
    "FetchResult",
    "Fetchable",
    "check_companions",
    "default_mirror",
    "fetch",
    "mirror_dirs",
    "sha256_file",
    "unavailable_message",
]

MIRROR_ENV = "FAIRCODE_DATA_MIRROR"
"""The environment variable naming the mirror folders (``os.pathsep``-separated)."""

MIRROR_FOLDERS = ("datasets", "datasets-extra")
"""The default mirrors: these folders of ``<project>/../shared``."""


@dataclass(frozen=True, slots=True)
class FetchResult:
    """Outcome of :func:`fetch`: how the file was obtained, where it is, its digest."""

    status: Literal["present", "mirror", "downloaded"]
    path: Path
    sha256: str
    checked: bool
    companions: tuple[FetchResult, ...] = ()
    """The outcome of each of the raw file's companions (``dataset.companions``)."""

    def line(self, audit: str) -> str:
        """The status line (one per file) ``faircode data fetch`` and the fetch stage print."""
        note = "verified" if self.checked else "no sha256 declared, digest"
        own = f"{audit}: {self.status} {self.path} ({note} {self.sha256})"
        return "\n".join([own, *(c.line(audit) for c in self.companions)])


def mirror_dirs(flags: Sequence[str] | None, env: str | None) -> tuple[Path, ...]:
    """Return the mirror folders: the ``--mirror`` flags if any, else the env value split."""
    texts = list(flags) if flags else (env or "").split(os.pathsep)
    return tuple(Path(t) for t in texts if t)


def default_mirror(cwd: Path) -> str:
    """``<project>/../shared/{datasets,datasets-extra}`` (``os.pathsep``-joined) for the project
    that holds ``cwd`` (or its DVC experiment copy under ``.dvc/tmp/exps/``)."""
    parts = cwd.resolve().parts
    for i in range(len(parts) - 2):
        if parts[i:i + 3] == (".dvc", "tmp", "exps"):
            cwd = Path(*parts[:i])
            break
    shared = cwd.resolve().parent / "shared"
    return os.pathsep.join(str((shared / name).resolve()) for name in MIRROR_FOLDERS)


def unavailable_message(
    manifest: Fetchable, *, missing: Path | None = None, reason: str = ""
) -> str:
    """Build ``<audit>: dataset unavailable: <instructions>`` for ``manifest``."""
    source = manifest.dataset.source
    text = source.instructions if source is not None and source.instructions else None
    if text is None:
        where = f" from {source.url}" if source is not None and source.url else ""
        text = f"obtain {Path(manifest.dataset.declared_path).name}{where}"
    if missing is not None:
        text += f" (expected at {missing}; `faircode data fetch {manifest.name}` verifies it)"
    if reason:
        text += f" ({reason})"
    return f"{manifest.name}: dataset unavailable: {' '.join(text.split())}"


def _install(name: str, target: Path, expected: str | None, temp: Path, digest: str,
             origin: str) -> bool:
    """Move ``temp`` into place as ``target`` if its digest is right; return whether it was
    checked."""
    if expected is not None and digest != expected:
        raise ChecksumError(
            f"{name}: {target.name} from {origin}: sha256: expected {expected}, "
            f"got {digest}; nothing was kept"
        )
    user_mode(temp, directory=False)  # mkstemp made it 0600: the user's file now, their umask
    os.replace(temp, target)
    return expected is not None


def fetch(
    manifest: Fetchable, *, mirrors: tuple[Path, ...], timeout: float = 60,
    deadline: float = 600, progress: bool = False
) -> FetchResult:
    """Obtain and verify the raw file of ``manifest``; see the module docstring for the order.

    ``mirrors`` are searched in order for ``<mirror>/<audit name>/<file name>``; ``()`` for none.
    A download waits at most ``timeout`` seconds for its next bytes, takes at most ``deadline``
    seconds in all and at most ``dataset.size`` bytes (else
    :data:`~faircode.audit._download.DEFAULT_MAX_BYTES`).  The companions of the raw file
    (``dataset.companions``: a lazy-load database's index) are fetched and verified the same way,
    from the same mirror folder (they have no URL of their own); they are the result's
    :attr:`FetchResult.companions`.
    """
    if isinstance(mirrors, str | Path) or not isinstance(mirrors, tuple):
        raise TypeError(f"fetch: mirrors: expected a tuple of paths, got {mirrors!r}")
    dataset = manifest.dataset
    source = dataset.source
    main = _fetch_file(manifest, dataset.path, dataset.sha256, mirrors=mirrors,
                       url=source.url if source is not None else None,
                       member=source.member if source is not None else None,
                       budget=lambda: Budget(timeout=timeout, deadline=deadline,
                                             max_bytes=dataset.size or DEFAULT_MAX_BYTES),
                       progress=progress)
    companions = tuple(
        _fetch_file(manifest, c.path, c.sha256, mirrors=mirrors, url=None, member=None,
                    budget=None, progress=progress) for c in dataset.companions)
    return replace(main, companions=companions)


def _fetch_file(
    manifest: Fetchable, target: Path, expected: str | None, *, mirrors: tuple[Path, ...],
    url: str | None, member: str | None, budget: Callable[[], Budget] | None, progress: bool
) -> FetchResult:
    """Obtain and verify one file of ``manifest`` (the raw file or a companion) at ``target``."""
    remove_stale(target)  # a killed fetch's partial files, whatever this one does
    stale: str | None = None
    if target.is_file():
        digest = sha256_file(target)
        if expected is None or digest == expected:
            return FetchResult("present", target, digest, expected is not None)
        stale = digest
    folder = manifest.dataset.mirror or manifest.name  # dataset.mirror: a folder of its own
    candidates = (Path(m) / folder / target.name for m in mirrors)
    copy = next((c for c in candidates if c.is_file()), None)
    if copy is not None:
        with staging(target) as temp, open_regular(copy, error=DataError) as handle:
            size = os.fstat(handle.fileno()).st_size
            digest = copy_hashing(handle, temp, total=size, progress=progress,
                                  label=manifest.name)
            checked = _install(manifest.name, target, expected, temp, digest, str(copy))
        return FetchResult("mirror", target, digest, checked)
    failed = "no mirror copy or URL to replace it"
    if url is not None and budget is not None:
        try:
            with staging(target) as temp:
                digest = download(url, member, temp, target=target, budget=budget(),
                                  progress=progress, label=manifest.name)
                checked = _install(manifest.name, target, expected, temp, digest, url)
            return FetchResult("downloaded", target, digest, checked)
        except NoDownload as exc:
            if stale is None:
                raise DataUnavailableError(unavailable_message(manifest, reason=str(exc))) from None
            failed = f"no mirror copy, and the {exc} (the file is kept as it is, unused)"
    if stale is not None:  # a copy exists but is wrong: an error to fix, never "unavailable"
        raise ChecksumError(f"{manifest.name}: {target}: sha256: expected {expected}, got {stale}; "
                            f"{failed}")
    missing = target if target != manifest.dataset.path else None
    raise DataUnavailableError(unavailable_message(manifest, missing=missing))


def check_companions(manifest: Fetchable, folder: Path) -> None:
    """Verify the companions of ``manifest``'s raw file in ``folder`` (where that file is read).

    A missing companion is :class:`DataUnavailableError` (``faircode data fetch`` obtains it), a
    wrong one :class:`ChecksumError`; both one line naming the file.
    """
    for companion in manifest.dataset.companions:
        file = folder / companion.path.name
        if not file.exists():
            raise DataUnavailableError(unavailable_message(manifest, missing=file))
        digest = sha256_file(file)
        if companion.sha256 is not None and digest != companion.sha256:
            raise ChecksumError(f"{file}: sha256: expected {companion.sha256}, got {digest}")
