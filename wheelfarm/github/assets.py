"""The release assets a wheel makes (the wheel, labelled with its Requires-Python, and its
PEP 658 `.metadata`), the release they go to, and what the farm reads back from an asset
listing: its digest and whether it is whole."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from wheelfarm.core.digest import sha256_file
from wheelfarm.core.errors import PublishError
from wheelfarm.core.wheelfile import parse_metadata, read_metadata_bytes

MAX_ASSET_BYTES = 2 * 1024**3  # release assets must be smaller than 2 GiB
SHA256 = re.compile(r"[0-9a-f]{64}")
REQUIRES_PYTHON = "Requires-Python "  # asset label prefix: the index reads it, no download


@dataclass(frozen=True)
class Upload:
    """One file to publish: streamed from `path`, or small generated `data`."""

    name: str
    sha256: str
    size: int
    path: Path | None = None
    data: bytes | None = None
    label: str | None = None

    @classmethod
    def of_bytes(cls, name: str, data: bytes) -> Upload:
        return cls(name, hashlib.sha256(data).hexdigest(), len(data), data=data)


def uploads_for(wheel: Path) -> list[Upload]:
    """The wheel (its label carries Requires-Python) and its METADATA for PEP 658 indexes."""
    size = wheel.stat().st_size
    if size >= MAX_ASSET_BYTES:
        msg = (
            f"{wheel.name} is {size / 1024**3:.2f} GiB; GitHub release assets must be under 2 GiB: "
            f"narrow its archs or split the package"
        )
        raise PublishError(msg)
    meta = read_metadata_bytes(wheel)
    requires = parse_metadata(meta).get("requires_python")
    label = f"{REQUIRES_PYTHON}{requires}" if requires else None
    return [
        Upload(wheel.name, sha256_file(wheel), size, path=wheel, label=label),
        Upload.of_bytes(f"{wheel.name}.metadata", meta),
    ]


def release_tag(wheel: str) -> str:
    """One release per package version: 'flash-attn-v2.8.3.post2'."""
    name, version, _, _ = parse_wheel_filename(wheel)
    return f"{name}-v{version.public}"


def version_tag(package: str, version: str) -> str:
    """release_tag of a planned build: its package and version, as its wheel will name them.

    >>> version_tag("Flash_Attn", "2.8.3.post2")
    'flash-attn-v2.8.3.post2'
    """
    return f"{canonicalize_name(package)}-v{Version(version).public}"


def asset_sha256(asset: dict[str, Any]) -> str | None:
    """The asset's sha256 from its `digest`, when that is `sha256:` and 64 hex digits."""
    digest = asset.get("digest")
    if not isinstance(digest, str) or not digest.startswith("sha256:"):
        return None
    value = digest.removeprefix("sha256:")
    return value if SHA256.fullmatch(value) else None


def uploaded(asset: dict[str, Any]) -> bool:
    """Whole assets only: a `starter` asset is what a broken upload left behind."""
    return bool(asset.get("state", "uploaded") == "uploaded")
