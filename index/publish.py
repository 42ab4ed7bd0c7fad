"""`wheelfarm publish`: upload wheels, their PEP 658 `.metadata` and build records to GitHub
Releases, one release per package version, never overwriting (docs/adr/0007-immutable-publish.md).

Same name + same sha256: skipped. Same name + another sha256: refused. A release holds at most
1000 assets, so a version that outgrows it continues in `<tag>-2`, `<tag>-3`, ...
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests
from packaging.utils import parse_wheel_filename

from wheelfarm.builder.wheelfile import read_metadata_bytes
from wheelfarm.errors import PublishError
from wheelfarm.net import HttpError, request

MAX_ASSETS = 1000  # GitHub answers 422 beyond this
SUMS = "SHA256SUMS"


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
    files = [Upload(wheel.name, wheel.read_bytes()),
             Upload(f"{wheel.name}.metadata", read_metadata_bytes(wheel))]
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
class GitHubPublisher:
    """Talks to the REST API: releases by tag, their assets, uploads."""

    repo: str
    api: str = "https://api.github.com"
    uploads: str = "https://uploads.github.com"
    token: str | None = field(default_factory=lambda: os.environ.get("GITHUB_TOKEN"))
    commit: str | None = field(default_factory=lambda: os.environ.get("GITHUB_SHA"))
    sleep: Callable[[float], None] | None = None
    session: requests.Session = field(default_factory=requests.Session)

    def _call(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
                   **kwargs.pop("headers", {})}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.sleep is not None:
            kwargs["sleep"] = self.sleep
        return request(self.session, method, url, headers=headers, **kwargs)

    def release(self, tag: str, *, create: bool) -> dict[str, Any] | None:
        try:
            return dict(self._call("GET", f"{self.api}/repos/{self.repo}/releases/tags/{quote(tag)}").json())
        except HttpError as exc:
            if "HTTP 404" not in str(exc):
                raise
        if not create:
            return None
        body: dict[str, Any] = {"tag_name": tag, "name": tag, "make_latest": "false",
                                "body": f"Wheels built by wheelfarm for {tag}. Install from the "
                                        f"index, not from here: see the project's Pages site."}
        if self.commit:
            body["target_commitish"] = self.commit
        return dict(self._call("POST", f"{self.api}/repos/{self.repo}/releases", json=body).json())

    def assets(self, release: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        url: str | None = f"{self.api}/repos/{self.repo}/releases/{release['id']}/assets?per_page=100"
        while url:
            response = self._call("GET", url)
            out += response.json()
            url = response.links.get("next", {}).get("url")
        return out

    def download(self, asset: dict[str, Any]) -> bytes:
        return self._call("GET", asset["url"], headers={"Accept": "application/octet-stream"}).content

    def upload(self, release: dict[str, Any], item: Upload) -> dict[str, Any]:
        url = f"{self.uploads}/repos/{self.repo}/releases/{release['id']}/assets?name={quote(item.name)}"
        return dict(self._call("POST", url, data=item.data,
                               headers={"Content-Type": "application/octet-stream"}).json())

    def delete(self, asset: dict[str, Any]) -> None:
        self._call("DELETE", f"{self.api}/repos/{self.repo}/releases/assets/{asset['id']}")


def _asset_sha(pub: GitHubPublisher, asset: dict[str, Any], sums: dict[str, str]) -> str:
    """An existing asset's sha256: its digest, the release's SHA256SUMS, or (last) its bytes."""
    digest = (asset.get("digest") or "").removeprefix("sha256:")
    return digest or sums.get(asset["name"]) or hashlib.sha256(pub.download(asset)).hexdigest()


def _parse_sums(text: str) -> dict[str, str]:
    return {p[1].lstrip("*"): p[0] for line in text.splitlines() if len(p := line.split()) == 2}  # noqa: PLR2004


def _tags(base: str) -> Iterator[str]:
    yield base
    n = 2
    while True:
        yield f"{base}-{n}"
        n += 1


def publish(wheels: list[Path], pub: GitHubPublisher,
            echo: Callable[[str], None] = lambda _: None) -> PublishReport:
    """Upload every wheel's files; check all names against what exists before uploading any."""
    report = PublishReport()
    groups: dict[str, list[list[Upload]]] = {}
    for wheel in sorted(wheels):
        groups.setdefault(release_tag(wheel.name), []).append(uploads_for(wheel))
    for base, items in groups.items():
        pending = list(items)
        for tag in _tags(base):
            release = pub.release(tag, create=bool(pending))
            if release is None:
                break
            assets = pub.assets(release)
            by_name = {a["name"]: a for a in assets}
            sums = _parse_sums(pub.download(by_name[SUMS]).decode()) if SUMS in by_name else {}
            still: list[list[Upload]] = []
            room = MAX_ASSETS - len(assets) - (0 if SUMS in by_name else 1)
            new_sums = dict(sums)
            for files in pending:
                present = [f for f in files if f.name in by_name]
                for f in present:
                    if _asset_sha(pub, by_name[f.name], sums) != f.sha256:
                        msg = (f"{f.name} is already published in release {tag!r} with different "
                               f"bytes; a published file is never replaced: bump the version or "
                               f"delete the asset by hand")
                        raise PublishError(msg)
                missing = [f for f in files if f.name not in by_name]
                if present and not missing:
                    report.skipped += [f.name for f in files]
                    new_sums.update({f.name: f.sha256 for f in files})
                    continue
                if present:  # partly uploaded earlier: finish here
                    report.skipped += [f.name for f in present]
                elif len(missing) > room:
                    still.append(files)
                    continue
                for f in missing:
                    echo(f"upload {tag}/{f.name} ({len(f.data)} bytes)")
                    by_name[f.name] = pub.upload(release, f)
                    report.uploaded.append(f.name)
                    room -= 1
                new_sums.update({f.name: f.sha256 for f in files})
                report.releases.add(tag)
            if new_sums != sums:
                text = "".join(f"{sha}  {name}\n" for name, sha in sorted(new_sums.items()))
                if SUMS in by_name:
                    pub.delete(by_name[SUMS])
                pub.upload(release, Upload(SUMS, text.encode()))
            pending = still
            if not pending:
                # later overflow releases may exist from earlier runs: their files were checked
                # when uploaded there, so a re-run only needs to look for this wheel's names
                break
    return report
