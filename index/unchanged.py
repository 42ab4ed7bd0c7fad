"""Whether a wheelhouse's site is already written from the same input: the digest of
everything the site is made from (the wheelhouse listing, the farm root's YAML and templates,
the title, this code), kept on line 1 of the site's file list with its report. An unchanged
rerun reads that line and stops: this module imports neither the writer (jinja2, SQLite,
packaging) nor the matrix reader, so the rerun of a 10,000-wheel wheelhouse is its 10,000
stat calls."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from wheelfarm import __version__
from wheelfarm.core import jsonread
from wheelfarm.core.errors import SiteError
from wheelfarm.core.record import is_record_name
from wheelfarm.core.root import FarmRoot

OWNED = ".wheelfarm-site"  # the site's file list (index/owned.py)


@dataclass
class SiteResult:
    written: int = 0  # files written anew (the rest were linked from the old site)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    combos: int = 0
    wheels: int = 0
    filed: int = 0  # wheels in at least one combo index
    unfiled: dict[str, list[str]] = field(default_factory=dict)  # reason -> wheels

    def counts(self) -> dict[str, object]:
        """What a rerun on the same input reports without reading it again."""
        return {
            "combos": self.combos,
            "wheels": self.wheels,
            "filed": self.filed,
            "unfiled": self.unfiled,
        }


def _read_head(out: Path) -> object:
    """Line 1 of the site's list (its input's digest, counts and number of files), decoded;
    the rest of the list is not read."""
    with (out / OWNED).open("rb") as fh:
        return jsonread.loads(fh.readline(jsonread.MAX_BYTES + 1), what=f"{OWNED} line 1")


def reuse(out: Path, input_key: str) -> SiteResult | None:
    """The site's own report when it was written from the same input (a caller's digest of
    everything it reads), so an unchanged rerun reads no wheel; else None."""
    try:
        data = _read_head(out)
        if not input_key or not isinstance(data, dict) or data.get("input") != input_key:
            return None
        counts = data["counts"]
        return SiteResult(
            unchanged=int(data["files"]),
            combos=int(counts["combos"]),
            wheels=int(counts["wheels"]),
            filed=int(counts["filed"]),
            unfiled={str(k): list(v) for k, v in counts["unfiled"].items()},
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # no site, or not one to trust: write it


def input_key(root: FarmRoot, wheelhouse: Path, title: str) -> str:
    """Everything a wheelhouse site is made from, by stat rather than by content where it is
    big: the wheelhouse listing, the farm root's YAML and templates, the title, this code."""
    digest = hashlib.sha256(f"{__version__}\0{title}\0{_wheelhouse_key(wheelhouse)}".encode())
    for folder in (root.matrix, root.templates):
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                digest.update(path.as_posix().encode() + path.read_bytes())
    if root.install_helper.is_file():
        digest.update(root.install_helper.read_bytes())
    return digest.hexdigest()


def _wheelhouse_key(folder: Path) -> str:
    """Digest of a wheelhouse as a listing: each wheel's and build record's name, size,
    mtime, inode and ctime. Equal keys mean nothing in it changed, and nothing needs reading."""
    check_wheelhouse(folder)
    digest = hashlib.sha256()
    # names alone, each stat taken as it is hashed: 100,000 stat results held to be sorted
    # would be the run's peak memory, and a Path per name a tenth of an unchanged rerun
    with os.scandir(folder) as it:
        listing = [item.name for item in it]
    for name in sorted(n for n in listing if n.endswith(".whl") or is_record_name(n)):
        st = os.stat(f"{folder}{os.sep}{name}")  # noqa: PTH116 - see above
        digest.update(
            f"{name}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0{st.st_ctime_ns}\n".encode()
        )
    return digest.hexdigest()


def check_wheelhouse(folder: Path) -> None:
    if not folder.is_dir():
        msg = f"wheelhouse {str(folder)!r} is not a folder"
        raise SiteError(msg)
