"""Where the index learns what exists locally: a wheelhouse (wheels plus their build records).
The GitHub Releases source lives in wheelfarm.github.releases and yields the same entries."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from wheelfarm.core.archive import READ_ERRORS
from wheelfarm.core.errors import SiteError
from wheelfarm.core.http import sha256_file
from wheelfarm.core.wheelfile import read_metadata_bytes, requires_python
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.index.entries import Covered, Placement, WheelEntry, covers_from_name
from wheelfarm.matrix.model import Matrix

FILES_DIR = "files"  # where a local site keeps its wheels, relative to the site root
Yanks = dict[tuple[str, str], str]  # (normalized name, public version) -> reason


def covers_for(record: dict[str, Any] | None, filename: str, matrix: Matrix | None) -> Placement:
    """The cells a wheel serves: from its build record, else read from its name."""
    listed = record_covers(record)
    return Placement(covers=listed) if listed else covers_from_name(filename, matrix)


def record_covers(record: dict[str, Any] | None) -> tuple[Covered, ...]:
    """The cells a build record lists (none when it lists none); ValueError for a record of
    the wrong shape."""
    try:
        return tuple(
            Covered(**{axis: str(c[axis]) for axis in ("cuda", "torch", "python", "platform")})
            for c in (record or {}).get("target", {}).get("covers") or ()
        )
    except (KeyError, TypeError, AttributeError) as exc:
        msg = f"target.covers is not a list of {{cuda, torch, python, platform}} ({exc!r})"
        raise ValueError(msg) from exc


def record_archs(record: dict[str, Any] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The SASS and PTX archs a build record found, each the union over its binaries."""
    found = (record or {}).get("archs_found")
    if not isinstance(found, dict):
        return (), ()
    union: dict[str, set[str]] = {"cubins": set(), "ptx": set()}
    for binary in found.values():
        for kind, archs in union.items():
            listed = binary.get(kind) if isinstance(binary, dict) else None
            archs.update(str(a) for a in (listed if isinstance(listed, list) else ()))
    return _by_sm(union["cubins"]), _by_sm(union["ptx"])


def _by_sm(archs: set[str]) -> tuple[str, ...]:
    """'sm_90a' after 'sm_90', 'sm_100' after both."""
    return tuple(sorted(archs, key=lambda a: (len(a.rstrip("abcdefghijklmnopqrstuvwxyz")), a)))


def _record(path: Path) -> dict[str, Any] | None:
    """A wheel's build record, or None when it has none."""
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_bytes())
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        msg = f"not JSON ({exc})"
        raise ValueError(msg) from exc
    if not isinstance(record, dict) or not isinstance(record.get("target", {}), dict):
        msg = "not a build record (a JSON object with a 'target' object)"
        raise ValueError(msg)  # noqa: TRY004 - callers catch ValueError for every bad record
    return record


@dataclass(frozen=True)
class LocalFile:
    """A file the local site carries under files/: a wheel, or the METADATA inside one (PEP
    658). Its sha256 says whether the copy already on the site can stay."""

    name: str
    sha256: str
    source: Path | None = None  # copied as it is
    data: bytes | None = None  # written, when there is no source


Policy = dict[str, frozenset[str]]  # build id -> the SASS archs its policy asks for


def from_wheelhouse(
    folder: Path, matrix: Matrix | None, yanked: Yanks, policy: Policy | None = None
) -> tuple[list[WheelEntry], list[LocalFile]]:
    """Entries for every wheel in `folder` (with their build records), plus files to copy."""
    _check_wheelhouse(folder)
    entries, files = [], []
    memo: dict[tuple[str, str], Placement] = {}
    for wheel in sorted(folder.glob("*.whl")):
        record_path = wheel.with_name(wheel.name + ".build.json")
        try:
            record = _record(record_path)
            listed = record_covers(record)
        except ValueError as exc:
            msg = f"{record_path}: {exc}; rebuild the wheel or delete the record"
            raise SiteError(msg) from exc
        try:
            sass, ptx = record_archs(record)
            wanted = (policy or {}).get(build_id_from_wheel(wheel.name)) if record else None
            meta = read_metadata_bytes(wheel)
            place = (
                Placement(covers=listed) if listed else covers_from_name(wheel.name, matrix, memo)
            )
            entry = WheelEntry(
                filename=wheel.name,
                url=f"{FILES_DIR}/{quote(wheel.name)}",
                sha256=sha256_file(wheel),
                size=wheel.stat().st_size,
                requires_python=requires_python(meta),
                metadata_sha256=hashlib.sha256(meta).hexdigest(),
                covers=place.covers,
                unfiled=place.reason,
                sass=sass,
                ptx=ptx,
                partial_archs=bool(wanted and not wanted <= set(sass)),
            )
        except READ_ERRORS as exc:
            msg = f"{wheel}: not a readable farm wheel ({exc}); rebuild it or remove it"
            raise SiteError(msg) from exc
        entries.append(with_yank(entry, yanked))
        files += [
            LocalFile(wheel.name, entry.sha256, source=wheel),
            LocalFile(f"{wheel.name}.metadata", entry.metadata_sha256 or "", data=meta),
        ]
    return entries, files


def wheelhouse_key(folder: Path) -> str:
    """Digest of a wheelhouse as a listing: each wheel's and build record's name, size and
    mtime. Equal keys mean nothing in it changed, and nothing needs reading."""
    _check_wheelhouse(folder)
    digest = hashlib.sha256()
    with os.scandir(folder) as it:
        listing = sorted(
            (e.name, e.stat()) for e in it if e.name.endswith((".whl", ".whl.build.json"))
        )
    for name, st in listing:
        digest.update(f"{name}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n".encode())
    return digest.hexdigest()


def _check_wheelhouse(folder: Path) -> None:
    if not folder.is_dir():
        msg = f"wheelhouse {str(folder)!r} is not a folder"
        raise SiteError(msg)


def with_yank(entry: WheelEntry, yanked: Yanks) -> WheelEntry:
    reason = yanked.get((entry.name, entry.version.public))
    if reason is None:
        return entry
    return dataclasses.replace(entry, yanked=reason)


def yanked_versions(matrix: Matrix) -> Yanks:
    """(normalized name, public version) -> reason, from `yanked:` in the package YAML."""
    return {
        (p.name, str(v.version)): v.yanked for p in matrix.packages for v in p.versions if v.yanked
    }
