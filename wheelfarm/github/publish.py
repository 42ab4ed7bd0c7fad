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

Immutable releases (a repository setting since 2025: a published release takes no new asset,
GitHub answers 422) are met before the first upload: a new release is made as a draft, filled,
and published last (PATCH draft=false; if another job published that tag meanwhile, the draft
is published as the next free `<tag>-N`); an existing release whose `immutable` is true is full
for this run, so its version continues in the next `<tag>-N`, as a full one does.

A run that stops before every wheel is up (a rate limit past the deadline) or that lacks a
wheel its shard planned (`--expect`) says so in its report; the CLI exits 8 on it, so "Re-run
failed jobs" publishes the rest.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import quote

from wheelfarm.core.errors import NetworkError, PublishError
from wheelfarm.core.record import BuildRecord, RecordError, path_for
from wheelfarm.core.wheelname import build_id_from_wheel, build_id_or_none
from wheelfarm.github.assets import Upload, asset_sha256, release_tag, uploaded, uploads_for
from wheelfarm.github.client import BudgetExhaustedError, GitHubClient

MAX_ASSETS = 1000  # GitHub answers 422 beyond this
UPLOAD_TRIES = 3
MAX_RELEASES = 64  # releases of one version (64,000 assets): past it the API is not GitHub's
logger = logging.getLogger(__name__)


@dataclass
class PublishReport:
    uploaded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    releases: set[str] = field(default_factory=set)
    left: list[str] = field(default_factory=list)  # wheels a budget stop left for the next run
    stopped: str | None = None
    missing: list[str] = field(default_factory=list)  # planned build ids with no wheel anywhere

    def failure(self, wheels: int) -> str | None:
        """The one-line reason this run must fail (so a rerun finishes it), or None."""
        parts = []
        if self.left:
            parts.append(
                f"stopped with {wheels - len(self.left)} of {wheels} wheels published and "
                f"{len(self.left)} left ({self.stopped})"
            )
        if self.missing:
            shown = ", ".join(self.missing[:10]) + (" ..." if len(self.missing) > 10 else "")  # noqa: PLR2004
            parts.append(
                f"{len(self.missing)} planned build(s) have no wheel here and are not published: "
                f"{shown} (their build jobs failed or their artifacts were not downloaded)"
            )
        if not parts:
            return None
        return "; ".join(parts) + "; re-run the failed jobs to finish"


@dataclass
class Publisher:
    """Release and asset calls for publishing, through the one GitHub client."""

    client: GitHubClient
    commit: str | None = field(default_factory=lambda: os.environ.get("GITHUB_SHA"))

    def find(self, tag: str) -> dict[str, Any] | None:
        """The published release of `tag`, or None (GitHub does not show drafts by tag)."""
        try:
            found = self.client.json("GET", self.client.repo_url(f"releases/tags/{quote(tag)}"))
        except NetworkError as exc:
            if exc.status == HTTPStatus.NOT_FOUND:
                return None
            raise
        return _checked_release(found, tag)

    def release(self, tag: str) -> dict[str, Any]:
        """The release for `tag`: the published one, or a new draft (at GITHUB_SHA) that
        `finish` publishes once its assets are up. A 422 means another run published the tag
        a moment ago: read theirs."""
        found = self.find(tag)
        if found is not None:
            return found
        body: dict[str, Any] = {
            "tag_name": tag,
            "name": tag,
            "draft": True,
            "make_latest": "false",
            "body": f"Wheels built by wheelfarm for {tag}. Install from the "
            f"index, not from here: see the project's Pages site.",
        }
        if self.commit:
            body["target_commitish"] = self.commit
        try:
            made = self.client.json("POST", self.client.repo_url("releases"), json=body)
        except NetworkError as exc:
            raced = self.find(tag) if exc.status == HTTPStatus.UNPROCESSABLE_ENTITY else None
            if raced is None:
                raise
            return raced
        return _checked_release(made, tag)

    def finish(self, release: dict[str, Any], free_tags: Iterable[str]) -> dict[str, Any]:
        """Publish a draft this run filled. When another job published its tag meanwhile
        (422), publish it under the next of `free_tags` instead."""
        url = self.client.repo_url(f"releases/{release['id']}")
        fields: dict[str, Any] = {"draft": False, "make_latest": "false"}
        tags = iter(free_tags)
        for _ in range(MAX_RELEASES):
            try:
                return _checked_release(self.client.json("PATCH", url, json=fields), None)
            except NetworkError as exc:  # noqa: PERF203 - a retry loop: the error is the signal
                if exc.status != HTTPStatus.UNPROCESSABLE_ENTITY:
                    raise
                tag = next(tags)
                logger.warning(
                    "tag %s was published by another run; publishing as %s",
                    release["tag_name"],
                    tag,
                )
                fields |= {"tag_name": tag, "name": tag}
        msg = f"draft release {release['tag_name']!r}: no free tag to publish it under"
        raise PublishError(msg)

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
                    answer = self.client.json("POST", url, data=item.data, headers=headers)
                else:
                    with item.path.open("rb") as fh:
                        answer = self.client.json("POST", url, data=fh, headers=headers)
                return _checked_asset(answer, item.name)
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
            if asset.get("name") != item.name:
                continue
            if uploaded(asset) and asset_sha256(asset) == item.sha256:
                return asset
            if not uploaded(asset):
                logger.info(
                    "deleting the broken upload of %s (state %s)", item.name, asset.get("state")
                )
                self.delete(asset)
        return None


def _checked_release(found: Any, tag: str | None) -> dict[str, Any]:  # noqa: ANN401 - JSON
    """A release object from the API, with the fields the publisher relies on checked."""
    if (
        not isinstance(found, dict)
        or not isinstance(found.get("id"), int)
        or not isinstance(found.get("tag_name"), str)
        or (tag is not None and found["tag_name"] != tag)
    ):
        shown = repr(found)[:120]
        msg = f"release {tag!r}: GitHub answered with {shown}, not that release; nothing uploaded"
        raise NetworkError(msg)
    return found


def _checked_asset(found: Any, name: str) -> dict[str, Any]:  # noqa: ANN401 - JSON
    """An uploaded asset as the API answered it: an object with an integer id and our name."""
    if (
        not isinstance(found, dict)
        or not isinstance(found.get("id"), int)
        or found.get("name") != name
    ):
        msg = f"upload of {name}: GitHub answered with {repr(found)[:120]}, not that asset"
        raise NetworkError(msg)
    return found


def _tags(base: str) -> Iterator[str]:
    """base, base-2, ... base-MAX_RELEASES; past that an API is answering for every tag."""
    yield base
    yield from (f"{base}-{n}" for n in range(2, MAX_RELEASES + 1))
    msg = (
        f"{base}: {MAX_RELEASES} releases of one version already exist, or the API answers for "
        f"every tag; check --api and the repository's releases"
    )
    raise NetworkError(msg)


@dataclass
class _Release:
    tag: str
    data: dict[str, Any] | None  # None: not created yet
    assets: dict[str, dict[str, Any]]  # name -> whole asset
    broken: dict[str, dict[str, Any]]  # name -> starter asset

    @property
    def immutable(self) -> bool:
        """Published under the immutable-releases setting: takes no new asset."""
        return self.data is not None and self.data.get("immutable") is True

    @property
    def draft(self) -> bool:
        """A draft this run made: published by `finish` once filled."""
        return self.data is not None and self.data.get("draft") is True

    @property
    def room(self) -> int:
        return 0 if self.immutable else MAX_ASSETS - len(self.assets) - len(self.broken)


def _existing(pub: Publisher, base: str) -> list[_Release]:
    """Every release of one version that exists (base, base-2, ...)."""
    out: list[_Release] = []
    for tag in _tags(base):
        found = pub.find(tag)
        if found is None:
            break
        assets = [a for a in pub.assets(found) if isinstance(a.get("name"), str)]
        out.append(
            _Release(
                tag,
                found,
                {a["name"]: a for a in assets if uploaded(a)},
                {a["name"]: a for a in assets if not uploaded(a)},
            )
        )
    return out


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
    """Fill the version's releases in order, creating the next one (a draft) when all are full
    or immutable."""
    for files in todo:
        target = next(
            (r for r in releases if r.room >= len(files) or any(f.name in r.broken for f in files)),
            None,
        )
        while target is None or target.data is None:
            if target is None:
                taken = {r.tag for r in releases}
                target = _Release(next(t for t in _tags(base) if t not in taken), None, {}, {})
                releases.append(target)
                for closed in (r for r in releases if r.immutable):
                    logger.warning(
                        "release %s is immutable (the repository's immutable-releases setting): "
                        "new files go to %s",
                        closed.tag,
                        target.tag,
                    )
            target.data = pub.release(target.tag)
            if target.room < len(files):  # another run published this tag meanwhile, immutable
                target = None
        for f in files:
            logger.info("upload %s/%s (%d bytes)", target.tag, f.name, f.size)
            target.assets[f.name] = pub.upload(target.data, f)
            target.broken.pop(f.name, None)
            report.uploaded.append(f.name)
        report.releases.add(target.tag)


def _finish(pub: Publisher, base: str, releases: list[_Release], report: PublishReport) -> None:
    """Publish the drafts this run filled (last, so an immutable release is whole when it is
    published). A draft that cannot be published leaves its wheels for the rerun."""
    for release in releases:
        if not release.draft or not release.assets or release.data is None:
            continue
        taken = {r.tag for r in releases}
        free = (t for t in _tags(base) if t not in taken and pub.find(t) is None)
        try:
            release.data = pub.finish(release.data, free)
        except NetworkError as exc:
            logger.warning("draft %s not published: %s", release.tag, exc)
            unpublished = set(release.assets)
            report.uploaded = [n for n in report.uploaded if n not in unpublished]
            report.left = sorted({*report.left, *(n for n in unpublished if n.endswith(".whl"))})
            report.stopped = report.stopped or str(exc)
            if isinstance(exc, BudgetExhaustedError):
                raise
            continue
        report.releases.discard(release.tag)
        release.tag = str(release.data["tag_name"])
        report.releases.add(release.tag)


def _records(wheels: list[Path], report: PublishReport) -> dict[str, dict[str, Any]]:
    """Build records of the wheels this run uploaded, by wheel name, without their "timing"
    (when and how fast): the records file is named by its hash, so the same wheels give the
    same file from any rebuild. A rebuilt wheel that is already there uploads no record."""
    done = set(report.uploaded)
    out = {}
    for wheel in wheels:
        path = path_for(wheel)
        if wheel.name in done and path.is_file():
            try:
                record = BuildRecord.read(path)
            except RecordError as exc:  # check_artifacts read it first: changed since
                raise PublishError(str(exc)) from exc
            out[wheel.name] = record.published().to_object()
    return out


def publish(
    wheels: list[Path], pub: Publisher, expect: dict[str, str] | None = None
) -> PublishReport:
    """Publish every wheel into its version's releases; stop cleanly when GitHub's limits would
    outlast the job (`report.left` then names what the next run publishes). `expect` (planned
    build id -> its release tag base, from the shard the plan made) fills `report.missing`:
    the planned builds with no wheel in `wheels` and none published."""
    report = PublishReport()
    groups: dict[str, list[Path]] = {}
    for wheel in sorted(wheels):
        groups.setdefault(release_tag(wheel.name), []).append(wheel)
    plans = []
    known: dict[str, list[_Release]] = {}
    for base, mine in groups.items():
        releases = known[base] = _existing(pub, base)
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
            try:
                _upload_all(pub, base, releases, todo, report)
                _publish_records(pub, releases, mine, report)
            finally:
                _finish(pub, base, releases, report)
        except BudgetExhaustedError as exc:  # noqa: PERF203 - the stop ends the loop
            report.stopped = str(exc)
            done = set(report.uploaded)
            report.left = sorted(
                {
                    f.name
                    for _, _, _, rest in plans
                    for files in rest
                    for f in files
                    if f.name.endswith(".whl") and f.name not in done
                }
            )
            logger.warning("stopped: %s", exc)
            break
    if expect:
        report.missing = _missing(pub, expect, wheels, known)
    return report


def _missing(
    pub: Publisher, expect: dict[str, str], wheels: list[Path], known: dict[str, list[_Release]]
) -> list[str]:
    """Planned build ids with no wheel among `wheels` and no wheel published in their
    version's releases (read once per version)."""
    here = {build_id_from_wheel(w.name) for w in wheels}
    out = []
    for build_id, base in expect.items():
        if build_id in here:
            continue
        if base not in known:
            known[base] = _existing(pub, base)
        published = {build_id_or_none(name) for release in known[base] for name in release.assets}
        if build_id not in published:
            out.append(build_id)
    return out


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
