"""Where the index learns what was published: a local wheelhouse, or GitHub Releases via the REST
API (paginated, retried, rate-limit aware). Hashes come from the asset `digest`, else the
release's SHA256SUMS or the wheel's build record: wheels themselves are never downloaded."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests

from wheelfarm.builder.wheelfile import parse_metadata, read_metadata_bytes
from wheelfarm.errors import SiteError
from wheelfarm.index.entries import Covered, WheelEntry, covers_from_name
from wheelfarm.matrix.model import Matrix
from wheelfarm.net import parse_sha256sums, request, sha256_file

FILES_DIR = "files"  # where a local site keeps its wheels, relative to the site root


def _covers(
    record: dict[str, Any] | None, filename: str, matrix: Matrix | None
) -> tuple[Covered, ...]:
    if record and record.get("target", {}).get("covers"):
        return tuple(
            Covered(cuda=c["cuda"], torch=c["torch"], python=c["python"], platform=c["platform"])
            for c in record["target"]["covers"]
        )
    return covers_from_name(filename, matrix)


@dataclass(frozen=True)
class LocalFile:
    """A file the local site must carry (a wheel or its .metadata), by its name under files/."""

    name: str
    source: Path | None = None
    data: bytes | None = None


def from_wheelhouse(
    folder: Path, matrix: Matrix | None, yanked: dict[tuple[str, str], str]
) -> tuple[list[WheelEntry], list[LocalFile]]:
    """Entries for every wheel in `folder` (with their build records), plus files to copy."""
    if not folder.is_dir():
        msg = f"wheelhouse {str(folder)!r} is not a folder"
        raise SiteError(msg)
    entries, files = [], []
    for wheel in sorted(folder.glob("*.whl")):
        record_path = wheel.with_name(wheel.name + ".build.json")
        record = json.loads(record_path.read_text()) if record_path.is_file() else None
        meta = read_metadata_bytes(wheel)
        entry = WheelEntry(
            filename=wheel.name,
            url=f"{FILES_DIR}/{quote(wheel.name)}",
            sha256=sha256_file(wheel),
            size=wheel.stat().st_size,
            requires_python=parse_metadata(meta).get("Requires-Python"),
            metadata_sha256=hashlib.sha256(meta).hexdigest(),
            covers=_covers(record, wheel.name, matrix),
        )
        entry = _with_yank(entry, yanked)
        entries.append(entry)
        files += [
            LocalFile(wheel.name, source=wheel),
            LocalFile(f"{wheel.name}.metadata", data=meta),
        ]
    return entries, files


def _with_yank(entry: WheelEntry, yanked: dict[tuple[str, str], str]) -> WheelEntry:
    reason = yanked.get((entry.name, entry.version.public))
    if reason is None:
        return entry
    return dataclasses.replace(entry, yanked=reason)


def _link_next(response: requests.Response) -> str | None:
    return response.links.get("next", {}).get("url")


@dataclass
class GitHubReleases:
    """Reads a repository's releases and their wheel assets through the REST API."""

    repo: str
    api: str = "https://api.github.com"
    token: str | None = field(default_factory=lambda: os.environ.get("GITHUB_TOKEN"))
    sleep: Callable[[float], None] | None = None
    session: requests.Session = field(default_factory=requests.Session)
    requests_made: int = 0

    def _get(self, url: str, *, accept: str = "application/vnd.github+json") -> requests.Response:
        headers = {"Accept": accept, "X-GitHub-Api-Version": "2022-11-28"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        self.requests_made += 1
        kwargs: dict[str, Any] = {"headers": headers}
        if self.sleep is not None:
            kwargs["sleep"] = self.sleep
        return request(self.session, "GET", url, **kwargs)

    def _pages(self, url: str) -> Iterator[Any]:
        next_url: str | None = url
        while next_url:
            response = self._get(next_url)
            yield from response.json()
            next_url = _link_next(response)

    def releases(self) -> Iterator[dict[str, Any]]:
        yield from self._pages(f"{self.api}/repos/{self.repo}/releases?per_page=100")

    def assets(self, release: dict[str, Any]) -> list[dict[str, Any]]:
        return list(
            self._pages(
                f"{self.api}/repos/{self.repo}/releases/{release['id']}/assets?per_page=100"
            )
        )

    def download_text(self, asset: dict[str, Any]) -> bytes:
        """A small asset (SHA256SUMS, .metadata, .build.json) through the API's asset URL."""
        return self._get(asset["url"], accept="application/octet-stream").content

    def entries(
        self,
        matrix: Matrix | None,
        yanked: dict[tuple[str, str], str],
        previous: dict[str, WheelEntry] | None = None,
    ) -> list[WheelEntry]:
        """Every wheel asset of every release; reuse `previous` entries whose asset is unchanged."""
        previous = previous or {}
        out = []
        for release in self.releases():
            assets = self.assets(release)
            by_name = {a["name"]: a for a in assets}
            sums: dict[str, str] = {}
            for asset in (a for a in assets if a["name"].endswith(".whl")):
                # '+' in a path reaches some storage back ends as a space: always send %2B
                url = asset["browser_download_url"].replace("+", "%2B")
                old = previous.get(url)
                if old is None or old.size != asset["size"]:
                    if not sums and "digest" not in asset:
                        sums = self._sums(by_name)
                    old = self._entry(asset, url, by_name, sums, release, matrix)
                out.append(_with_yank(old, yanked))
        return out

    def _entry(
        self,
        asset: dict[str, Any],
        url: str,
        by_name: dict[str, dict[str, Any]],
        sums: dict[str, str],
        release: dict[str, Any],
        matrix: Matrix | None,
    ) -> WheelEntry:
        """One wheel asset: sha256 from its digest, build record or SHA256SUMS; metadata and
        covered cells from its small sibling assets."""
        name = asset["name"]
        record_asset = by_name.get(f"{name}.build.json")
        record = json.loads(self.download_text(record_asset)) if record_asset else None
        sha = (
            (asset.get("digest") or "").removeprefix("sha256:")
            or (record["wheel"]["sha256"] if record else None)
            or sums.get(name)
        )
        if not sha:
            msg = (
                f"{name} in release {release.get('tag_name')!r} has no digest, no build record "
                f"and no SHA256SUMS line; republish it with `wheelfarm publish`"
            )
            raise SiteError(msg)
        meta_asset = by_name.get(f"{name}.metadata")
        meta = self.download_text(meta_asset) if meta_asset else None
        return WheelEntry(
            filename=name,
            url=url,
            sha256=sha,
            size=asset["size"],
            requires_python=parse_metadata(meta).get("Requires-Python") if meta else None,
            metadata_sha256=hashlib.sha256(meta).hexdigest() if meta else None,
            covers=_covers(record, name, matrix),
        )

    def _sums(self, by_name: dict[str, dict[str, Any]]) -> dict[str, str]:
        if "SHA256SUMS" not in by_name:
            return {}
        return parse_sha256sums(self.download_text(by_name["SHA256SUMS"]).decode())


def yanked_versions(matrix: Matrix) -> dict[tuple[str, str], str]:
    """(normalized name, public version) -> reason, from `yanked:` in the package YAML."""
    return {
        (p.name, str(v.version)): v.yanked for p in matrix.packages for v in p.versions if v.yanked
    }
