"""`wheelfarm publish`: upload wheels, their PEP 658 `.metadata` and build records to GitHub
Releases, one release per package version, never overwriting (docs/adr/0007-immutable-publish.md).

Same name + same sha256: skipped. Same name + another sha256: refused. A release holds at most
1000 assets, so a version that outgrows it continues in `<tag>-2`, `<tag>-3`, ...
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import quote

from packaging.utils import parse_wheel_filename

from wheelfarm.core.errors import NetworkError, PublishError
from wheelfarm.core.wheelfile import read_metadata_bytes
from wheelfarm.github.client import GitHubClient
from wheelfarm.github.releases import SUMS, parse_sha256sums

MAX_ASSETS = 1000  # GitHub answers 422 beyond this
MAX_ASSET_BYTES = 2 * 1024**3  # release assets must be smaller than 2 GiB
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Upload:
    """One file to publish, with the bytes' hash."""

    name: str
    data: bytes

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def uploads_for(wheel: Path) -> list[Upload]:
    """The wheel, its METADATA (for PEP 658 indexes) and its build record when present."""
    size = wheel.stat().st_size
    if size >= MAX_ASSET_BYTES:
        msg = (
            f"{wheel.name} is {size / 1024**3:.2f} GiB; GitHub release assets must be under 2 GiB: "
            f"narrow its archs or split the package"
        )
        raise PublishError(msg)
    files = [
        Upload(wheel.name, wheel.read_bytes()),
        Upload(f"{wheel.name}.metadata", read_metadata_bytes(wheel)),
    ]
    record = wheel.with_name(wheel.name + ".build.json")
    if record.is_file():
        files.append(Upload(record.name, record.read_bytes()))
    return files


def release_tag(wheel: str) -> str:
    """One release per package version: 'flash-attn-v2.8.3.post2'."""
    name, version, _, _ = parse_wheel_filename(wheel)
    return f"{name}-v{version.public}"


@dataclass
class PublishReport:
    uploaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    releases: set[str] = field(default_factory=set)


@dataclass
class Publisher:
    """Release and asset calls for publishing, through the one GitHub client."""

    client: GitHubClient
    commit: str | None = field(default_factory=lambda: os.environ.get("GITHUB_SHA"))

    def release(self, tag: str) -> dict[str, Any]:
        """The release for `tag`, created (at GITHUB_SHA) when it does not exist yet."""
        try:
            return dict(
                self.client.call("GET", self.client.repo_url(f"releases/tags/{quote(tag)}")).json()
            )
        except NetworkError as exc:
            if exc.status != HTTPStatus.NOT_FOUND:
                raise
        body: dict[str, Any] = {
            "tag_name": tag,
            "name": tag,
            "make_latest": "false",
            "body": f"Wheels built by wheelfarm for {tag}. Install from the "
            f"index, not from here: see the project's Pages site.",
        }
        if self.commit:
            body["target_commitish"] = self.commit
        return dict(self.client.call("POST", self.client.repo_url("releases"), json=body).json())

    def assets(self, release: dict[str, Any]) -> list[dict[str, Any]]:
        url = self.client.repo_url(f"releases/{release['id']}/assets?per_page=100")
        return list(self.client.paginate(url))

    def download(self, asset: dict[str, Any]) -> bytes:
        return self.client.download(asset)

    def upload(self, release: dict[str, Any], item: Upload) -> dict[str, Any]:
        url = self.client.upload_url(release["id"], item.name)
        headers = {"Content-Type": "application/octet-stream"}
        return dict(self.client.call("POST", url, data=item.data, headers=headers).json())

    def delete(self, asset: dict[str, Any]) -> None:
        self.client.call("DELETE", self.client.repo_url(f"releases/assets/{asset['id']}"))


def _asset_sha(pub: Publisher, asset: dict[str, Any], sums: dict[str, str]) -> str:
    """An existing asset's sha256: its digest, the release's SHA256SUMS, or (last) its bytes."""
    digest = (asset.get("digest") or "").removeprefix("sha256:")
    return digest or sums.get(asset["name"]) or hashlib.sha256(pub.download(asset)).hexdigest()


def _tags(base: str) -> Iterator[str]:
    yield base
    n = 2
    while True:
        yield f"{base}-{n}"
        n += 1


def _check_same(
    pub: Publisher, tag: str, asset: dict[str, Any], item: Upload, sums: dict[str, str]
) -> None:
    if _asset_sha(pub, asset, sums) != item.sha256:
        msg = (
            f"{item.name} is already published in release {tag!r} with different bytes; a "
            f"published file is never replaced: bump the version or delete the asset by hand"
        )
        raise PublishError(msg)


def _fill(
    pub: Publisher,
    tag: str,
    release: dict[str, Any],
    pending: list[list[Upload]],
    report: PublishReport,
) -> list[list[Upload]]:
    """Put what fits of `pending` (one wheel's files each) into one release; return the rest.

    A wheel's files stay together. Names already there must hold the same bytes; a wheel whose
    files are all there is skipped, one partly uploaded earlier is finished here.
    """
    assets = pub.assets(release)
    by_name = {a["name"]: a for a in assets}
    sums = parse_sha256sums(pub.download(by_name[SUMS]).decode()) if SUMS in by_name else {}
    new_sums = dict(sums)
    room = MAX_ASSETS - len(assets) - (0 if SUMS in by_name else 1)
    rest: list[list[Upload]] = []
    for files in pending:
        present = [f for f in files if f.name in by_name]
        for f in present:
            _check_same(pub, tag, by_name[f.name], f, sums)
        missing = [f for f in files if f.name not in by_name]
        if not present and len(missing) > room:
            rest.append(files)
            continue
        report.skipped += [f.name for f in present]
        for f in missing:
            logger.info("upload %s/%s (%d bytes)", tag, f.name, len(f.data))
            by_name[f.name] = pub.upload(release, f)
            report.uploaded.append(f.name)
            room -= 1
        if missing:
            report.releases.add(tag)
        new_sums.update({f.name: f.sha256 for f in files})
    if new_sums != sums:
        text = "".join(f"{sha}  {name}\n" for name, sha in sorted(new_sums.items()))
        if SUMS in by_name:
            pub.delete(by_name[SUMS])
        pub.upload(release, Upload(SUMS, text.encode()))
    return rest


def publish(wheels: list[Path], pub: Publisher) -> PublishReport:
    """Upload every wheel's files into its version's release, rolling over when one is full."""
    report = PublishReport()
    groups: dict[str, list[list[Upload]]] = {}
    for wheel in sorted(wheels):
        groups.setdefault(release_tag(wheel.name), []).append(uploads_for(wheel))
    for base, pending in groups.items():
        for tag in _tags(base):
            pending = _fill(pub, tag, pub.release(tag), pending, report)  # noqa: PLW2901
            if not pending:
                break
    return report
