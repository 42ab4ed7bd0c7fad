"""The farm's workflows as a library: choose a target for this machine, write a site from
Releases (from a wheelhouse: wheelfarm.index.write), and the local farm (plan, build what is
missing, index). The CLI parses arguments, calls these and prints what they return."""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from wheelfarm.builder import envs
from wheelfarm.builder.build import BuildOptions, BuildResult, expectation, run_build
from wheelfarm.builder.target import Target, resolve, resolve_group, select
from wheelfarm.builder.toolchain import installed_cuda_tag
from wheelfarm.builder.verify import member_differences, verify_static
from wheelfarm.core.digest import sha256_file
from wheelfarm.core.errors import PlanError, UsageError, VerifyError
from wheelfarm.core.platforms import host_platform
from wheelfarm.core.record import BuildRecord, RecordError, path_for
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.github.actions import SAVE_MARGIN_MINUTES
from wheelfarm.github.artifacts import record_problems
from wheelfarm.github.assets import version_tag
from wheelfarm.github.client import GitHubClient
from wheelfarm.github.publish import Publisher, PublishReport, publish
from wheelfarm.github.releases import ReleasesSource
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.lock import LOCK_TIMEOUT
from wheelfarm.index.site import Site
from wheelfarm.index.sources import yanked_versions
from wheelfarm.index.unchanged import SiteResult
from wheelfarm.index.write import index_wheelhouse, policy, write_site
from wheelfarm.matrix.expand import Expansion
from wheelfarm.matrix.model import ArchList, Matrix
from wheelfarm.matrix.plan import Filters, Plan, existing_build_ids, make_plan

logger = logging.getLogger(__name__)
DEMO_PACKAGE = "wheelfarm-demo"


@dataclass(frozen=True, kw_only=True)
class TargetQuery:
    """What the user asked to build: a build id, or flags completed from this machine."""

    build_id: str | None = None
    local: bool = False
    package: str | None = None
    version: str | None = None
    cuda: str | None = None
    torch: str | None = None
    python: str | None = None
    platform: str | None = None
    archs: str | None = None
    torch_index: str | None = None  # --torch-index; None: pip's own for flags, torch's for an id

    @property
    def from_pypi(self) -> bool:
        """Whether torch comes from pip's own index (PyPI or a mirror), not a CUDA index."""
        return (self.torch_index or (None if self.build_id else envs.PIP_INDEX)) == envs.PIP_INDEX


def choose_targets(
    matrix: Matrix,
    expansion: Expansion,
    query: TargetQuery,
    pythons: Sequence[str] = (),
    variants: Sequence[str] = (),
) -> list[Target]:
    """The targets of a group id (its `pythons` and CUDA `variants`, or all), or the one
    target choose_target finds."""
    if query.build_id:
        group = resolve_group(
            matrix, expansion, query.build_id, pythons, variants, from_pypi=query.from_pypi
        )
        return [_with_archs(target, query.archs) for target in group]
    if pythons or variants:
        msg = (
            "--pythons and --variants select builds of a group id "
            "(see `wheelfarm plan --format json`)"
        )
        raise UsageError(msg)
    return [choose_target(matrix, expansion, query)]


def choose_target(matrix: Matrix, expansion: Expansion, query: TargetQuery) -> Target:
    """The target for a build id, or for flags with this machine's CUDA, Python and platform."""
    if query.build_id:
        target = resolve(matrix, expansion, query.build_id, from_pypi=query.from_pypi)
        return _with_archs(target, query.archs)
    if not (query.local or query.package):
        msg = "give a build id (see `wheelfarm plan`), or --local, or --package with flags"
        raise PlanError(msg)
    target = select(
        matrix,
        expansion,
        package=query.package or DEMO_PACKAGE,
        cuda=query.cuda or installed_cuda_tag(dict(os.environ)),
        python=query.python or f"{sys.version_info[0]}.{sys.version_info[1]}",
        platform=query.platform or host_platform(),
        torch=query.torch,
        version=query.version,
        from_pypi=query.from_pypi,
    )
    return _with_archs(target, query.archs)


def _with_archs(target: Target, archs: str | None) -> Target:
    """The target with `--archs` in place of its arch list (a quick local build)."""
    if not archs:
        return target
    try:
        parsed = ArchList.parse(archs)
    except ValueError as exc:
        msg = f"--archs: {exc}"
        raise PlanError(msg) from exc
    return dataclasses.replace(target, build=dataclasses.replace(target.build, archs=parsed))


def index_releases(
    matrix: Matrix,
    expansion: Expansion,
    client: GitHubClient,
    out: Path,
    *,
    title: str,
    allow_removal: bool = False,
    lock_timeout: float = LOCK_TIMEOUT,
) -> SiteResult:
    """The site of a repository's releases (links to the assets; nothing downloaded)."""
    entries = ReleasesSource(client).entries(matrix, yanked_versions(matrix), policy(expansion))
    logger.info("read %d wheels with %d API requests", len(entries), client.requests_made)
    with Site(out, lock_timeout=lock_timeout) as site, Catalog(entries) as wheels:
        del entries  # the catalog holds them now
        return write_site(matrix, expansion, wheels, site, title=title, allow_removal=allow_removal)


@dataclass(frozen=True)
class _FarmResult:
    plan: Plan
    built: list[BuildResult]
    site: SiteResult
    index_url: str


def local_farm(
    matrix: Matrix,
    expansion: Expansion,
    target: Target,
    opts: BuildOptions,
    *,
    site: Path,
    title: str,
) -> _FarmResult:
    """Plan what this machine can build for the target's cell, build what `opts.out_dir` (the
    local release store) lacks, write the site and return the index URL users point pip at."""
    b = target.build
    mine = Filters(
        package=(b.package,),
        cuda=(b.cuda,),
        torch=(b.torch_minor or "*",),
        python=(b.python,),
        platform=(b.platform,),
    )
    store = opts.out_dir
    existing = existing_build_ids(store if store.is_dir() else None)
    plan = make_plan(matrix, expansion, filters=mine, existing=existing)
    logger.info("[plan] %d to build, %d already in %s", len(plan.todo), len(plan.present), store)
    built = [
        run_build(target if todo.id == target.id else resolve(matrix, expansion, todo.id), opts)
        for todo in plan.todo
    ]
    summary = index_wheelhouse(matrix, expansion, store, site, title=title)
    logger.info("[index] %s: %d wheels, %d indexes", site, summary.wheels, summary.combos)
    # a torch-free wheel is listed under every torch: point at the newest
    torch = b.torch_minor or max((c.torch for c in b.covers), key=Version)
    index_url = f"{site.resolve().as_uri()}/{b.cuda}/torch{torch}/"
    return _FarmResult(plan, built, summary, index_url)


def check_artifacts(matrix: Matrix, expansion: Expansion, wheels: list[Path]) -> None:
    """Before anything is attested or uploaded: each wheel is a planned build of this matrix
    (so no build can plant a wheel under another package's name), its record's hash holds,
    and the static verify passes. VerifyError lists every problem."""
    problems: list[str] = []
    failed = 0
    for wheel in wheels:
        found = _artifact_problems(matrix, expansion, wheel)
        failed += bool(found)
        problems += found
    if problems:
        # VerifyError's heading is "<what> failed verification"
        what = f"nothing was published: {failed} of {len(wheels)} artifacts"
        raise VerifyError(what, problems)


def _artifact_problems(matrix: Matrix, expansion: Expansion, wheel: Path) -> list[str]:
    try:
        build_id = build_id_from_wheel(wheel.name)
    except ValueError as exc:
        return [f"{wheel.name}: not a wheel name ({exc})"]
    if build_id not in expansion.by_id:
        return [f"{wheel.name}: {build_id!r} is no planned build of this farm"]
    problems = record_problems(wheel, build_id) if path_for(wheel).is_file() else []
    report = verify_static(wheel, expectation(resolve(matrix, expansion, build_id)))
    return problems + [f"{wheel.name}: {p}" for p in report.problems]


def publish_wheels(
    matrix: Matrix,
    expansion: Expansion,
    wheels: list[Path],
    client: GitHubClient,
    expect: list[str] | None = None,
) -> PublishReport:
    """Check every artifact, then publish (stopping cleanly at the client's deadline); with
    `expect` (the batch's planned build ids; its artifacts' wheels were checked against them by
    github/artifacts.py) the report names those neither here nor published."""
    unknown = [b for b in expect or () if b not in expansion.by_id]
    if unknown:
        msg = f"--expect names {len(unknown)} build(s) this farm does not plan: {unknown[:5]}"
        raise PlanError(msg)
    check_artifacts(matrix, expansion, wheels)
    builds = [expansion.by_id[b] for b in expect or ()]
    tags = {b.id: version_tag(b.distribution, b.version) for b in builds}
    report = publish(wheels, Publisher(client), tags)
    logger.info("%d API requests, %d content-creating", client.requests_made, client.content_made)
    return report


def job_deadline(started: float, minutes: int) -> float:
    """When a CI job's build must stop: its time limit counted from the job's own start (image
    pull, toolkit install and torch env come out of it too), less the minutes the job needs
    afterwards to save its compiler cache and upload what it made."""
    return started + (minutes - SAVE_MARGIN_MINUTES) * 60


@dataclass(frozen=True)
class _Rebuilt:
    build_id: str
    sha256: str


def _read_record(wheel: Path, path: Path) -> BuildRecord:
    """The build record of `wheel` (UsageError when it is not one)."""
    try:
        record = BuildRecord.read(path, what=path.name)
    except RecordError as exc:
        msg = f"{str(path)!r} is not a build record ({exc})"
        raise UsageError(msg) from exc
    if record.wheel.filename != wheel.name:
        named = record.wheel.filename
        msg = f"{str(path)!r} is the build record of {named!r}, not of {wheel.name!r}"
        raise UsageError(msg)
    return record


def _archs(text: str) -> ArchList:
    """A build record's arch list; UsageError for one of no shape (records are input)."""
    try:
        return ArchList.parse(text)
    except ValueError as exc:
        msg = f"the build record's target.archs {text[:60]!r} is no arch list ({exc})"
        raise UsageError(msg) from exc


def rebuild_and_compare(
    matrix: Matrix,
    expansion: Expansion,
    wheel: Path,
    record_path: Path,
    *,
    cache: Path,
    python: str | None = None,
) -> _Rebuilt:
    """`wheelfarm verify --rebuild`: build the wheel's target again as its build record says
    (build id, archs and the recorded options) in a temporary folder, and compare the bytes.
    VerifyError names the members that differ and keeps the rebuild to look at."""
    record = _read_record(wheel, record_path)
    target = resolve(matrix, expansion, record.build_id)
    archs = record.target.archs
    if archs and archs != target.build.archs.torch:  # built with --archs
        build = dataclasses.replace(target.build, archs=_archs(archs))
        target = dataclasses.replace(target, build=build)
    tmp = Path(tempfile.mkdtemp(prefix="wheelfarm-rebuild-"))
    logger.info("rebuilding %s in %s", target.id, tmp)
    fresh = BuildOptions(out_dir=tmp / "out", work_dir=tmp / "work", cache=cache, python=python)
    opts = fresh.replaying(record.options)
    again = run_build(target, opts).wheel
    digest = sha256_file(wheel)
    if again.name == wheel.name and sha256_file(again) == digest:
        shutil.rmtree(tmp, ignore_errors=True)
        return _Rebuilt(target.id, digest)
    problems = [f"not byte-identical to its rebuild {again} (sha256 {sha256_file(again)})"]
    problems += member_differences(wheel, again) or [
        "every member is the same; the zip itself differs (member order, times or modes)"
    ]
    raise VerifyError(wheel.name, problems)
