"""Read what a repository published: every wheel asset of every release, as index entries. The
sha256 comes from the asset's `digest`, else its build record, else the release's SHA256SUMS;
the wheels themselves are never downloaded."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from wheelfarm.core.errors import SiteError
from wheelfarm.core.wheelfile import parse_metadata
from wheelfarm.github.client import GitHubClient
from wheelfarm.index.entries import WheelEntry
from wheelfarm.index.sources import Yanks, covers_for, with_yank
from wheelfarm.matrix.model import Matrix

SUMS = "SHA256SUMS"


def parse_sha256sums(text: str) -> dict[str, str]:
    r"""`sha256sum` output (`HASH  NAME` or `HASH *NAME` lines) as name -> hash.

    >>> parse_sha256sums("ab  x.whl\ncd *y.whl\n")
    {'x.whl': 'ab', 'y.whl': 'cd'}
    """
    out = {}
    for line in text.splitlines():
        digest, _, name = line.strip().partition(" ")
        if digest and name.strip():
            out[name.strip().lstrip("*")] = digest
    return out


@dataclass
class ReleasesSource:
    """Lists a repository's releases and turns their wheel assets into index entries."""

    client: GitHubClient

    def releases(self) -> Iterator[dict[str, Any]]:
        yield from self.client.paginate(self.client.repo_url("releases?per_page=100"))

    def assets(self, release: dict[str, Any]) -> list[dict[str, Any]]:
        url = self.client.repo_url(f"releases/{release['id']}/assets?per_page=100")
        return list(self.client.paginate(url))

    def entries(
        self,
        matrix: Matrix | None,
        yanked: Yanks,
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
                out.append(with_yank(old, yanked))
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
        record = json.loads(self.client.download(record_asset)) if record_asset else None
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
        meta = self.client.download(meta_asset) if meta_asset else None
        return WheelEntry(
            filename=name,
            url=url,
            sha256=sha,
            size=asset["size"],
            requires_python=parse_metadata(meta).get("requires_python") if meta else None,
            metadata_sha256=hashlib.sha256(meta).hexdigest() if meta else None,
            covers=covers_for(record, name, matrix),
        )

    def _sums(self, by_name: dict[str, dict[str, Any]]) -> dict[str, str]:
        if SUMS not in by_name:
            return {}
        return parse_sha256sums(self.client.download(by_name[SUMS]).decode())
