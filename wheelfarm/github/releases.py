"""Read what a repository published: the Releases are the farm's source of truth, for the plan
(what exists) and for the index (what to list). Everything comes from the asset listings, 100
assets a request: a wheel's sha256 is its `digest`, its PEP 658 hash the `digest` of its
`.metadata` asset, its Requires-Python the wheel asset's label, its cells its name. Assets from
before digests existed fall back to the release's SHA256SUMS or the wheel's build record.

The API's answers are data, not trusted: a draft release (not public yet) is not read, and an
asset whose name is no farm wheel name (`notes.whl`, a non-ASCII name), whose fields have the
wrong types, or whose download URL is not https (plain http only to loopback, for tests) is
skipped with a warning naming it; the rest are listed."""

from __future__ import annotations

import hashlib
import ipaddress
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from wheelfarm.core import jsonread
from wheelfarm.core.errors import NetworkError, SiteError
from wheelfarm.core.http import DeadlineError
from wheelfarm.core.record import SUFFIX, BuildRecord, RecordError
from wheelfarm.core.wheelfile import parse_metadata
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.github.assets import REQUIRES_PYTHON, asset_sha256, uploaded
from wheelfarm.github.client import BudgetExhaustedError, GitHubClient
from wheelfarm.index.entries import WheelEntry
from wheelfarm.index.sources import (
    Policy,
    Yanks,
    covers_for,
    with_archs,
    with_kernels,
    with_yank,
)
from wheelfarm.matrix.model import Matrix

SUMS = "SHA256SUMS"  # written by publishers before digests; still read
RECORDS = "records-"  # records-<hash>.json: the build records one publishing run added
MAX_RECORDS = 64 << 20  # a run's records for 1,000 wheels are a few MB
logger = logging.getLogger(__name__)


def _parse_sha256sums(text: str) -> dict[str, str]:
    r"""`sha256sum` output (`HASH  NAME` or `HASH *NAME` lines) as name -> hash.

    >>> _parse_sha256sums("ab  x.whl\ncd *y.whl\n")
    {'x.whl': 'ab', 'y.whl': 'cd'}
    """
    out = {}
    for line in text.splitlines():
        digest, _, name = line.strip().partition(" ")
        if digest and name.strip():
            out[name.strip().lstrip("*")] = digest
    return out


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _asset_problem(asset: dict[str, Any], trusted: Callable[[str], bool]) -> str | None:
    """Why an API asset object cannot be listed, or None: `name` a printable ASCII string (a
    `.whl` one a farm wheel name), `size` and `id` integers, `url` on the API host (`trusted`),
    and `browser_download_url` https (http only to loopback)."""
    name, size = asset.get("name"), asset.get("size")
    if not isinstance(name, str) or not name or not name.isascii() or not name.isprintable():
        return "its name is not a printable ASCII string"
    if not isinstance(asset.get("id"), int) or not isinstance(size, int) or size < 0:
        return "its id or size is not a whole number"
    if not isinstance(asset.get("url"), str) or not trusted(asset["url"]):
        return "its API url is not on the API host"
    return _wheel_name_problem(name) or _link_problem(asset.get("browser_download_url"))


def _wheel_name_problem(name: str) -> str | None:
    if not name.endswith(".whl"):
        return None
    try:
        build_id_from_wheel(name)
    except ValueError as exc:
        return f"not a wheel name ({exc})"
    return None


def _link_problem(link: object) -> str | None:
    if not isinstance(link, str) or not link.isascii() or not link.isprintable():
        return "its browser_download_url is not a printable ASCII string"
    parts = urlsplit(link)
    host = parts.hostname or ""
    if host and (parts.scheme == "https" or (parts.scheme == "http" and _loopback(host))):
        return None
    return f"its download URL {link[:80]!r} is not an https URL"


@dataclass
class ReleasesSource:
    """Lists a repository's releases and turns their wheel assets into index entries."""

    client: GitHubClient

    def releases(self) -> Iterator[dict[str, Any]]:
        """Published releases (a draft is a publisher's unfinished work, its assets not public)."""
        for release in self.client.paginate(self.client.repo_url("releases?per_page=100")):
            if not isinstance(release.get("id"), int):
                logger.warning("release %r: no numeric id; skipped", release.get("tag_name"))
            elif release.get("draft") is not True:
                yield release

    def assets(self, release: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Whole assets by name (a `starter` left by a broken upload is not published), each
        of the shape the index relies on; a wheel asset whose name is no farm wheel's is
        skipped with a warning."""
        url = self.client.repo_url(f"releases/{release['id']}/assets?per_page=100")
        out = {}
        for asset in self.client.paginate(url):
            problem = _asset_problem(asset, self.client.trusted)
            if problem is None:
                if uploaded(asset):
                    out[asset["name"]] = asset
            else:
                logger.warning(
                    "release %r: asset %r skipped: %s",
                    release.get("tag_name"),
                    asset.get("name"),
                    problem,
                )
        return out

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
                if not name.endswith(".whl"):
                    continue
                try:
                    entry = self._entry(release, asset, assets, legacy, matrix)
                except ValueError as exc:
                    logger.warning("%s: skipped (%s)", name, exc)
                    continue
                record = records.get(name)
                entry = with_kernels(with_archs(entry, record, policy), record, matrix)
                out.append(with_yank(entry, yanked))
        return out

    def _records(self, assets: dict[str, dict[str, Any]]) -> dict[str, BuildRecord]:
        """Wheel name -> build record, from the release's records-*.json assets. An asset too
        big to be one or not a JSON object, or a record in it of the wrong shape, is skipped
        with a warning: the wheels are still listed, without archs."""
        out: dict[str, BuildRecord] = {}
        for name, asset in sorted(assets.items()):
            if not (name.startswith(RECORDS) and name.endswith(".json")):
                continue
            try:
                if int(asset.get("size", 0)) > MAX_RECORDS:
                    msg = f"{asset.get('size')} bytes, over the {MAX_RECORDS} read"
                    raise ValueError(msg)  # noqa: TRY301 - reported with the rest below
                data = jsonread.loads(self.client.download(asset, max_bytes=MAX_RECORDS), what=name)
                if not isinstance(data, dict):
                    msg = "not a JSON object"
                    raise ValueError(msg)  # noqa: TRY004, TRY301 - as above
            except (BudgetExhaustedError, DeadlineError):
                raise
            except (ValueError, TypeError, NetworkError) as exc:
                logger.warning("%s: skipped (%s); its wheels are listed without archs", name, exc)
                continue
            for wheel, value in data.items():
                record = _published_record(value, what=f"{name}: {wheel[:80]!r}")
                if record is not None:
                    out[wheel] = record
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
        digest = asset.get("digest")
        if digest is not None and asset_sha256(asset) is None:  # GitHub's, or forged: skip it
            msg = f"its digest {str(digest)[:80]!r} is not sha256: and 64 hex digits"
            raise ValueError(msg)
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


def _published_record(value: object, *, what: str) -> BuildRecord | None:
    """One record of a records-*.json; None (with a warning) for one of the wrong shape."""
    try:
        return BuildRecord.from_object(value, what=what)
    except RecordError as exc:
        logger.warning("skipped (%s); that wheel is listed without archs", exc)
        return None


@dataclass
class _Legacy:
    """What assets published before `digest` need: SHA256SUMS and per-wheel build records,
    each downloaded once, and only when a wheel asset of the release lacks a digest."""

    client: GitHubClient
    assets: dict[str, dict[str, Any]]
    _records: dict[str, BuildRecord | None] = field(default_factory=dict)

    @cached_property
    def active(self) -> bool:
        return any(n.endswith(".whl") and asset_sha256(a) is None for n, a in self.assets.items())

    @cached_property
    def sums(self) -> dict[str, str]:
        asset = self.assets.get(SUMS)
        text = self.client.download(asset).decode(errors="replace") if asset else ""
        return _parse_sha256sums(text)

    def record(self, wheel: str) -> BuildRecord | None:
        asset = self.assets.get(wheel + SUFFIX)
        if asset is None or not self.active:
            return None
        if wheel not in self._records:
            try:
                data = BuildRecord.from_json(self.client.download(asset), what=asset["name"])
            except RecordError as exc:
                logger.warning("skipped (%s)", exc)
                data = None
            self._records[wheel] = data
        return self._records[wheel]

    def sha256(self, wheel: str) -> str | None:
        record = self.record(wheel)
        if record is not None:
            return record.wheel.sha256 or None
        return self.sums.get(wheel)
