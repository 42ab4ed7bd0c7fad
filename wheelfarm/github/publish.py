"""`wheelfarm publish`: upload wheels and their PEP 658 `.metadata` to GitHub Releases, one release
per package version, never overwriting (docs/adr/0007-immutable-publish.md, docs/adr/0009-publish-
at-scale.md).

Two passes. First every name is checked against what is published, in every release of its
version: same name + same sha256 is skipped, same name + other bytes refuses the whole run before
anything is uploaded. Then the rest is uploaded, streamed from disk, paced by the client under
GitHub's limits; a release holds at most 1000 assets, so a version that outgrows it continues in
`<tag>-2`, `<tag>-3`. An upload that broke off leaves an asset in state `starter` that blocks its
name: the publisher deletes its own and uploads again. Build records go up as one
`records-<hash>.json` per release and run. Nothing is ever deleted that was uploaded whole, and
no SHA256SUMS is kept: every asset carries GitHub's `digest`.
"""

from __future__ import annotations

import hashlib
import json
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
from wheelfarm.core.http import sha256_file
from wheelfarm.core.wheelfile import parse_metadata, read_metadata_bytes
from wheelfarm.github.client import BudgetExhaustedError, GitHubClient

MAX_ASSETS = 1000  # GitHub answers 422 beyond this
MAX_ASSET_BYTES = 2 * 1024**3  # release assets must be smaller than 2 GiB
UPLOAD_TRIES = 3
REQUIRES_PYTHON = "Requires-Python "  # asset label prefix: the index reads it, no download
logger = logging.getLogger(__name__)


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


def asset_sha256(asset: dict[str, Any]) -> str | None:
    digest = asset.get("digest") or ""
    return digest.removeprefix("sha256:") if digest.startswith("sha256:") else None


def uploaded(asset: dict[str, Any]) -> bool:
    """Whole assets only: a `starter` asset is what a broken upload left behind."""
    return bool(asset.get("state", "uploaded") == "uploaded")


@dataclass
class PublishReport:
    uploaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    releases: set[str] = field(default_factory=set)
    left: list[str] = field(default_factory=list)  # wheels a budget stop left for the next run
    stopped: str | None = None


@dataclass
class Publisher:
    """Release and asset calls for publishing, through the one GitHub client."""

    client: GitHubClient
    commit: str | None = field(default_factory=lambda: os.environ.get("GITHUB_SHA"))

    def find(self, tag: str) -> dict[str, Any] | None:
        try:
            return dict(
                self.client.json("GET", self.client.repo_url(f"releases/tags/{quote(tag)}"))
            )
        except NetworkError as exc:
            if exc.status == HTTPStatus.NOT_FOUND:
                return None
            raise

    def release(self, tag: str) -> dict[str, Any]:
        """The release for `tag`, created (at GITHUB_SHA) when it does not exist yet; a 422
        means another run created it a moment ago: read theirs."""
        found = self.find(tag)
        if found is not None:
            return found
        body: dict[str, Any] = {
            "tag_name": tag,
            "name": tag,
            "make_latest": "false",
            "body": f"Wheels built by wheelfarm for {tag}. Install from the "
            f"index, not from here: see the project's Pages site.",
        }
        if self.commit:
            body["target_commitish"] = self.commit
        try:
            return dict(self.client.json("POST", self.client.repo_url("releases"), json=body))
        except NetworkError as exc:
            raced = self.find(tag) if exc.status == HTTPStatus.UNPROCESSABLE_ENTITY else None
            if raced is None:
                raise
            return raced

    def assets(self, release: dict[str, Any]) -> list[dict[str, Any]]:
        url = self.client.repo_url(f"releases/{release['id']}/assets?per_page=100")
        return list(self.client.paginate(url))

    def delete(self, asset: dict[str, Any]) -> None:
        self.client.call("DELETE", self.client.repo_url(f"releases/assets/{asset['id']}"))

    def upload(self, release: dict[str, Any], item: Upload) -> dict[str, Any]:
        """Upload one file, streamed; a broken try leaves a `starter` asset, deleted before the
        next try. A 422 for a name whose whole asset holds these bytes counts as done."""
        url = self.client.upload_url(release["id"], item.name, item.label)
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(item.size)}
        for attempt in range(1, UPLOAD_TRIES + 1):
            try:
                if item.path is None:
                    return dict(self.client.json("POST", url, data=item.data, headers=headers))
                with item.path.open("rb") as fh:
                    return dict(self.client.json("POST", url, data=fh, headers=headers))
            except BudgetExhaustedError:  # noqa: PERF203 - a retry loop: the error is the signal
                raise
            except NetworkError:
                if attempt == UPLOAD_TRIES:
                    raise
                done = self._clear(release, item)
                if done is not None:
                    return done
                logger.warning("upload of %s broke off; trying again", item.name)
        raise AssertionError  # unreachable: the last try returns or raises

    def _clear(self, release: dict[str, Any], item: Upload) -> dict[str, Any] | None:
        """After a failed upload: the asset if it arrived whole after all, else delete the
        `starter` asset the failure left under this name and return None."""
        for asset in self.assets(release):
            if asset["name"] != item.name:
                continue
            if uploaded(asset) and asset_sha256(asset) == item.sha256:
                return asset
            if not uploaded(asset):
                logger.info(
                    "deleting the broken upload of %s (state %s)", item.name, asset.get("state")
                )
                self.delete(asset)
        return None


def _tags(base: str) -> Iterator[str]:
    yield base
    n = 2
    while True:
        yield f"{base}-{n}"
        n += 1


@dataclass
class _Release:
    tag: str
    data: dict[str, Any] | None  # None: not created yet
    assets: dict[str, dict[str, Any]]  # name -> whole asset
    broken: dict[str, dict[str, Any]]  # name -> starter asset

    @property
    def room(self) -> int:
        return MAX_ASSETS - len(self.assets) - len(self.broken)


def _existing(pub: Publisher, base: str) -> list[_Release]:
    """Every release of one version that exists (base, base-2, ...)."""
    out: list[_Release] = []
    for tag in _tags(base):
        found = pub.find(tag)
        if found is None:
            return out
        assets = pub.assets(found)
        out.append(
            _Release(
                tag,
                found,
                {a["name"]: a for a in assets if uploaded(a)},
                {a["name"]: a for a in assets if not uploaded(a)},
            )
        )
    raise AssertionError  # unreachable: _tags never ends


def _published_sha256(pub: Publisher, asset: dict[str, Any]) -> str:
    """A whole asset's sha256: its digest, or (assets older than digests) its bytes."""
    return asset_sha256(asset) or hashlib.sha256(pub.client.download(asset)).hexdigest()


def _conflicts(
    pub: Publisher, releases: list[_Release], wheels: list[list[Upload]], report: PublishReport
) -> list[list[Upload]]:
    """Check every name first; return the wheels still to upload (in part or whole)."""
    problems, todo = [], []
    for files in wheels:
        missing = []
        for f in files:
            there = next((r for r in releases if f.name in r.assets), None)
            if there is None:
                missing.append(f)
            elif _published_sha256(pub, there.assets[f.name]) != f.sha256:
                problems.append(f"{f.name} in release {there.tag!r}")
            else:
                report.skipped.append(f.name)
        if missing:
            todo.append(missing)
    if problems:
        msg = (
            f"{len(problems)} file(s) are already published with different bytes: "
            f"{'; '.join(problems[:5])}; a published file is never replaced: bump the version, "
            f"or delete the assets by hand. Nothing was uploaded."
        )
        raise PublishError(msg)
    return todo


def _upload_all(
    pub: Publisher,
    base: str,
    releases: list[_Release],
    todo: list[list[Upload]],
    report: PublishReport,
) -> None:
    """Fill the version's releases in order, creating the next one when all are full."""
    tags = _tags(base)
    for files in todo:
        target = next(
            (r for r in releases if r.room >= len(files) or any(f.name in r.broken for f in files)),
            None,
        )
        if target is None:
            tag = next(t for t in tags if all(r.tag != t for r in releases))
            target = _Release(tag, None, {}, {})
            releases.append(target)
        if target.data is None:
            target.data = pub.release(target.tag)
        for f in files:
            logger.info("upload %s/%s (%d bytes)", target.tag, f.name, f.size)
            target.assets[f.name] = pub.upload(target.data, f)
            target.broken.pop(f.name, None)
            report.uploaded.append(f.name)
        report.releases.add(target.tag)


def _records(wheels: list[Path], report: PublishReport) -> dict[str, dict[str, Any]]:
    """Build records of the wheels this run uploaded, by wheel name, without their "timing"
    (when and how fast): the records file is named by its hash, so the same wheels give the
    same file from any rebuild. A rebuilt wheel that is already there uploads no record."""
    done = set(report.uploaded)
    out = {}
    for wheel in wheels:
        record = wheel.with_name(wheel.name + ".build.json")
        if wheel.name in done and record.is_file():
            data = json.loads(record.read_text(encoding="utf-8"))
            out[wheel.name] = {k: v for k, v in data.items() if k != "timing"}
    return out


def publish(wheels: list[Path], pub: Publisher) -> PublishReport:
    """Publish every wheel into its version's releases; stop cleanly when GitHub's limits would
    outlast the job (`report.left` then names what the next run publishes)."""
    report = PublishReport()
    groups: dict[str, list[Path]] = {}
    for wheel in sorted(wheels):
        groups.setdefault(release_tag(wheel.name), []).append(wheel)
    plans = []
    for base, mine in groups.items():
        releases = _existing(pub, base)
        plans.append(
            (
                base,
                mine,
                releases,
                _conflicts(pub, releases, [uploads_for(w) for w in mine], report),
            )
        )
    for base, mine, releases, todo in plans:
        try:
            _upload_all(pub, base, releases, todo, report)
        except BudgetExhaustedError as exc:
            report.stopped = str(exc)
            report.left = sorted(
                {
                    f.name
                    for files in todo
                    for f in files
                    if f.name.endswith(".whl") and f.name not in report.uploaded
                }
            )
            logger.warning("stopped: %s", exc)
            break
        _publish_records(pub, releases, mine, report)
    return report


def _publish_records(
    pub: Publisher, releases: list[_Release], wheels: list[Path], report: PublishReport
) -> None:
    """One records-<hash>.json per release this run added wheels to (small, never replaced)."""
    records = _records(wheels, report)
    for release in releases:
        mine = {n: r for n, r in records.items() if n in release.assets}
        if not mine or release.data is None:
            continue
        data = (json.dumps(mine, indent=1, sort_keys=True) + "\n").encode()
        item = Upload.of_bytes(f"records-{hashlib.sha256(data).hexdigest()[:16]}.json", data)
        if item.name not in release.assets and release.room > 0:
            release.assets[item.name] = pub.upload(release.data, item)
