"""Where the index learns what exists locally: a wheelhouse (wheels plus their build records).
The GitHub Releases source lives in wheelfarm.github.releases and yields the same entries."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from wheelfarm.core.archive import READ_ERRORS
from wheelfarm.core.errors import SiteError
from wheelfarm.core.http import sha256_file
from wheelfarm.core.wheelfile import parse_metadata, read_metadata_bytes
from wheelfarm.index.entries import Covered, WheelEntry, covers_from_name
from wheelfarm.matrix.model import Matrix

FILES_DIR = "files"  # where a local site keeps its wheels, relative to the site root
Yanks = dict[tuple[str, str], str]  # (normalized name, public version) -> reason


def covers_for(
    record: dict[str, Any] | None, filename: str, matrix: Matrix | None
) -> tuple[Covered, ...]:
    """The cells a wheel serves: from its build record, else read from its name."""
    return record_covers(record) or covers_from_name(filename, matrix)


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
    """A file the local site must carry (a wheel or its .metadata), by its name under files/."""

    name: str
    source: Path | None = None
    data: bytes | None = None


def from_wheelhouse(
    folder: Path, matrix: Matrix | None, yanked: Yanks
) -> tuple[list[WheelEntry], list[LocalFile]]:
    """Entries for every wheel in `folder` (with their build records), plus files to copy."""
    if not folder.is_dir():
        msg = f"wheelhouse {str(folder)!r} is not a folder"
        raise SiteError(msg)
    entries, files = [], []
    for wheel in sorted(folder.glob("*.whl")):
        record_path = wheel.with_name(wheel.name + ".build.json")
        try:
            listed = record_covers(_record(record_path))
        except ValueError as exc:
            msg = f"{record_path}: {exc}; rebuild the wheel or delete the record"
            raise SiteError(msg) from exc
        try:
            meta = read_metadata_bytes(wheel)
            entry = WheelEntry(
                filename=wheel.name,
                url=f"{FILES_DIR}/{quote(wheel.name)}",
                sha256=sha256_file(wheel),
                size=wheel.stat().st_size,
                requires_python=parse_metadata(meta).get("requires_python"),
                metadata_sha256=hashlib.sha256(meta).hexdigest(),
                covers=listed or covers_from_name(wheel.name, matrix),
            )
        except READ_ERRORS as exc:
            msg = f"{wheel}: not a readable farm wheel ({exc}); rebuild it or remove it"
            raise SiteError(msg) from exc
        entries.append(with_yank(entry, yanked))
        files += [
            LocalFile(wheel.name, source=wheel),
            LocalFile(f"{wheel.name}.metadata", data=meta),
        ]
    return entries, files


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
