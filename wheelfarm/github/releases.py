"""Read what a repository published: the Releases are the farm's source of truth, for the plan
(what exists) and for the index (what to list). Everything comes from the asset listings, 100
assets a request: a wheel's sha256 is its `digest`, its PEP 658 hash the `digest` of its
`.metadata` asset, its Requires-Python the wheel asset's label, its cells its name. Assets from
before digests existed fall back to the release's SHA256SUMS or the wheel's build record."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from wheelfarm.core.errors import SiteError
from wheelfarm.core.wheelfile import parse_metadata
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.github.client import GitHubClient
from wheelfarm.github.publish import REQUIRES_PYTHON, asset_sha256, uploaded
from wheelfarm.index.entries import WheelEntry
from wheelfarm.index.sources import Policy, Yanks, covers_for, with_archs, with_yank
from wheelfarm.matrix.model import Matrix

SUMS = "SHA256SUMS"  # written by publishers before digests; still read
RECORDS = "records-"  # records-<hash>.json: the build records one publishing run added
MAX_RECORDS = 64 << 20  # a run's records for 1,000 wheels are a few MB
logger = logging.getLogger(__name__)


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

    def assets(self, release: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Whole assets by name (a `starter` left by a broken upload is not published)."""
        url = self.client.repo_url(f"releases/{release['id']}/assets?per_page=100")
        return {a["name"]: a for a in self.client.paginate(url) if uploaded(a)}

    def wheel_assets(self) -> Iterator[tuple[dict[str, Any], dict[str, dict[str, Any]]]]:
        """(release, its assets by name) for every release holding a wheel."""
        for release in self.releases():
            assets = self.assets(release)
            if any(name.endswith(".whl") for name in assets):
                yield release, assets

    def build_ids(self) -> set[str]:
        """Build ids of every published wheel: what the planner must not build again."""
        return {
            build_id_from_wheel(name)
            for _, assets in self.wheel_assets()
            for name in assets
            if name.endswith(".whl")
        }

    def entries(
        self, matrix: Matrix | None, yanked: Yanks, policy: Policy | None = None
    ) -> list[WheelEntry]:
        """Every published wheel as an index entry, with the SASS and PTX archs its build
        record found (from the release's records-*.json: one download per publishing run)."""
        out = []
        for release, assets in self.wheel_assets():
            legacy = _Legacy(self.client, assets)
            records = self._records(assets)
            for name, asset in assets.items():
                if name.endswith(".whl"):
                    entry = self._entry(release, asset, assets, legacy, matrix)
                    out.append(with_yank(with_archs(entry, records.get(name), policy), yanked))
        return out

    def _records(self, assets: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Wheel name -> build record, from the release's records-*.json assets. An asset too
        big to be one, or not a JSON object of objects, is skipped with a warning: the
        wheels are still listed, without archs."""
        out: dict[str, dict[str, Any]] = {}
        for name, asset in sorted(assets.items()):
            if not (name.startswith(RECORDS) and name.endswith(".json")):
                continue
            try:
                if int(asset.get("size", 0)) > MAX_RECORDS:
                    msg = f"{asset.get('size')} bytes, over the {MAX_RECORDS} read"
                    raise ValueError(msg)  # noqa: TRY301 - reported with the rest below
                data = json.loads(self.client.download(asset))
                if not isinstance(data, dict):
                    msg = "not a JSON object"
                    raise ValueError(msg)  # noqa: TRY004, TRY301 - as above
            except (ValueError, TypeError) as exc:
                logger.warning("%s: skipped (%s); its wheels are listed without archs", name, exc)
                continue
            out.update((k, v) for k, v in data.items() if isinstance(v, dict))
        return out

    def _entry(
        self,
        release: dict[str, Any],
        asset: dict[str, Any],
        assets: dict[str, dict[str, Any]],
        legacy: _Legacy,
        matrix: Matrix | None,
    ) -> WheelEntry:
        name = asset["name"]
        sha = asset_sha256(asset) or legacy.sha256(name)
        if not sha:
            msg = (
                f"{name} in release {release.get('tag_name')!r} has no digest, no build record "
                f"and no SHA256SUMS line; republish it with `wheelfarm publish`"
            )
            raise SiteError(msg)
        meta = assets.get(f"{name}.metadata")
        label = asset.get("label") or ""
        requires = (
            label.removeprefix(REQUIRES_PYTHON) if label.startswith(REQUIRES_PYTHON) else None
        )
        meta_sha = None
        if meta is not None:
            meta_sha = asset_sha256(meta)
            if meta_sha is None or (requires is None and legacy.active):
                data = self.client.download(meta)
                meta_sha = hashlib.sha256(data).hexdigest()
                requires = parse_metadata(data).get("requires_python")
        place = covers_for(legacy.record(name), name, matrix)
        return WheelEntry(
            filename=name,
            url=asset["browser_download_url"].replace("+", "%2B"),  # '+' can arrive as ' '
            sha256=sha,
            size=asset["size"],
            requires_python=requires,
            metadata_sha256=meta_sha,
            covers=place.covers,
            unfiled=place.reason,
        )


@dataclass
class _Legacy:
    """What assets published before `digest` need: SHA256SUMS and per-wheel build records,
    each downloaded once, and only when a wheel asset of the release lacks a digest."""

    client: GitHubClient
    assets: dict[str, dict[str, Any]]
    _records: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    @cached_property
    def active(self) -> bool:
        return any(n.endswith(".whl") and asset_sha256(a) is None for n, a in self.assets.items())

    @cached_property
    def sums(self) -> dict[str, str]:
        asset = self.assets.get(SUMS)
        text = self.client.download(asset).decode(errors="replace") if asset else ""
        return parse_sha256sums(text)

    def record(self, wheel: str) -> dict[str, Any] | None:
        asset = self.assets.get(f"{wheel}.build.json")
        if asset is None or not self.active:
            return None
        if wheel not in self._records:
            data = json.loads(self.client.download(asset))
            self._records[wheel] = data if isinstance(data, dict) else None
        return self._records[wheel]

    def sha256(self, wheel: str) -> str | None:
        record = self.record(wheel)
        if record is not None and isinstance(record.get("wheel"), dict):
            return str(record["wheel"].get("sha256") or "") or None
        return self.sums.get(wheel)
