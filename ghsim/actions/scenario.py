"""A farm's first real run, through the Actions model, with the faults of a real one: the first
run is cancelled part-way, some builds fail and are rerun ("Re-run failed jobs"), uploads break,
the first Pages deploy is lost, and tags arrive together (two at once, then a third while the
second waits). benchmarks/first_run.py runs it on the whole shipped plan; the integration test
on one package."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import Version

from ghsim.actions.farm import Farm, Faults
from ghsim.actions.model import LimitHit, Model, Run
from ghsim.fakegithub import FakeGitHub, fake_github
from ghsim.roots import REPO
from ghsim.synthetic import farm_wheel
from wheelfarm.matrix.expand import Build
from wheelfarm.matrix.plan import Filters, Plan, make_plan

SCALE = 1000.0  # the fake GitHub's hour passes in 3.6 s


@dataclass
class Outcome:
    held: int  # builds Releases held before the first tag (warm)
    planned: int
    published: int
    lost: int
    limits: list[LimitHit]
    wall_days: float
    runner_hours: float
    max_output_bytes: int
    artifacts_per_run: dict[int, int]
    runs: dict[int, str]  # run id -> conclusion, every farm run
    reruns: int
    artifact_requests: int
    notes: list[str]
    tier1_hours: float  # from the first tag until the index holds every tier-1 wheel
    tier1_windows_hours: float  # the same for win_amd64's tier-1 wheels
    longest_run_days: float  # the longest farm run, from its start to its last job's end
    busy_runners: float  # the mean of busy runners while any job waited

    def line(self) -> str:
        return (
            f"published={self.published}/{self.planned} lost={self.lost} "
            f"limits_hit={len(self.limits)} wall_days={self.wall_days:.1f} "
            f"runner_hours={self.runner_hours:.0f} tier1_hours={self.tier1_hours:.1f} "
            f"tier1_windows_hours={self.tier1_windows_hours:.1f} "
            f"longest_run_days={self.longest_run_days:.1f} busy_runners={self.busy_runners:.1f}"
        )


def first_run(
    work: Path,
    *,
    workflows: str = "",
    inputs: dict[str, Any] | None = None,
    failing: int = 2,
    broken_uploads: int = 3,
    cancel_after_minutes: float = 24 * 60,
    lanes: int | None = None,
    warm: bool = False,
) -> Outcome:
    """The run, then reruns and later tags until every farm run has ended well (at most 4
    rounds of "Re-run failed jobs"); `lanes`: a farm.yaml with that many (Farm). `warm`:
    Releases already hold what a farm running before the selection's newest torch minor
    built (`running_farm`), published before the first tag."""
    fake = FakeGitHub(scale=SCALE)
    with fake_github(fake):
        farm = Farm(fake, work, workflows=workflows, faults=Faults(lose_deploys=1), lanes=lanes)
        held = running_farm(farm, inputs) if warm else set()
        if held:
            seed(fake, farm, held, work / "held")
        plan = _whole(farm, inputs, held)
        wanted = {b.id for b in plan.todo}
        names = work / "names"
        names.mkdir(parents=True)
        fake.break_uploads = {_name(farm, b, names) for b in sorted(wanted)[-broken_uploads:]}
        model = farm.model
        # the index's hourly schedule fires on the model's clock, and for the whole plan the
        # farm's daily one, which starts the next run of a pass longer than pool.run_days (a
        # selection leaves it out: a scheduled farm run plans the whole catalog)
        model.schedules("pages.yml", *(["farm.yml"] if inputs is None else []))

        def tag(name: str) -> Run:
            if inputs is None:
                return next(r for r in model.push_tag(name) if r.workflow.name == "farm")
            return model.dispatch("farm.yml", inputs)

        first = tag("v1")
        model.run_until_idle(cancel_after_minutes)
        model.cancel(first)  # someone stops the first run
        model.run_until_idle()
        # what the next runs build: not published (a cancelled job may have built its wheels)
        left = sorted(wanted - _published(fake))
        farm.faults.failing = set(left[:: max(1, len(left) // failing)][:failing])  # fail once each
        tag("v2")  # two tags at once: v3 waits ...
        tag("v3")
        tag("v4")  # ... and v4 replaces it in the concurrency group
        model.run_until_idle()
        reruns = 0
        for _ in range(4):
            failed = [
                r for r in model.runs if r.workflow.name == "farm" and r.conclusion == "failure"
            ]
            if not failed:
                break
            for r in failed:
                model.rerun_failed(r)
                reruns += 1
            model.run_until_idle()
        model.start(
            next(w for w in model.workflows() if w.name == "pages"),
            "schedule",
            {},
            "refs/heads/main",
        )
        model.run_until_idle()  # the daily Pages run after it all
        published = _published(fake)
    site = _site(model.deployed[-1]) if model.deployed else set()
    lost = len(farm.built - published) + len((published & wanted) - site)
    farm_runs = [r for r in model.runs if r.workflow.name == "farm"]
    tier1 = {b.id for g in plan.groups if plan.placed[g.id].tier == 1 for b in g.builds}
    windows = {i for i in tier1 if farm.builds[i].platform == "win_amd64"}
    return Outcome(
        held=len(held),
        planned=len(wanted),
        published=len(published & wanted),
        lost=lost,
        limits=list(model.limits_hit),
        wall_days=model.now / 1440,
        runner_hours=model.runner_minutes / 60,
        max_output_bytes=model.max_output_bytes,
        artifacts_per_run={
            r.id: sum(1 for a in model.artifacts if a.run_id == r.id) for r in farm_runs
        },
        runs={r.id: r.conclusion for r in farm_runs},
        reruns=reruns,
        artifact_requests=model.artifact_requests,
        notes=list(model.notes),
        tier1_hours=_on_index(model, tier1) / 60,
        tier1_windows_hours=_on_index(model, windows) / 60,
        longest_run_days=max((r.ended - r.started for r in farm_runs), default=0.0) / 1440,
        busy_runners=model.busy_while_waiting,
    )


def _on_index(model: Model, builds: set[str]) -> float:
    """The clock at the first deploy whose index holds every one of `builds` (inf: none did)."""
    return next(
        (
            at
            for at, site in zip(model.deployed_at, model.deployed, strict=True)
            if builds <= _site(site)
        ),
        math.inf,
    )


def _filters(inputs: dict[str, Any] | None, *, but: str = "") -> Filters:
    """farm.yml's dispatch inputs as the plan's filters (`but`: that axis left open)."""
    given = {k: tuple(v.split(",")) for k, v in (inputs or {}).items() if v and k != but}
    return Filters(**given)


def _whole(farm: Farm, inputs: dict[str, Any] | None, held: set[str]) -> Plan:
    """The whole pass the selection asks for, past what Releases hold: what the farm runs
    build between them."""
    return make_plan(
        farm.matrix, farm.expansion, filters=_filters(inputs), existing=held, one_run=False
    )


def running_farm(farm: Farm, inputs: dict[str, Any] | None) -> set[str]:
    """What a farm that ran before the selection's newest torch minor holds: every build its
    other axes select that serves an older torch (`--torch '2.15*'`: every build of torch <=
    2.14, the torch-free and stable-ABI builds that serve 2.15 too among them)."""
    newest = max(
        (Version(c.torch) for b in farm.expansion.builds for c in b.covers
         if _filters(inputs).match(c)),
        default=None,
    )  # fmt: skip
    others = _filters(inputs, but="torch")
    return {
        b.id
        for b in farm.expansion.builds
        if any(others.match(c) and Version(c.torch) < newest for c in b.covers)
    } if newest is not None else set()  # fmt: skip


def seed(fake: FakeGitHub, farm: Farm, held: set[str], house: Path) -> None:
    """`held`'s wheels published to the fake's Releases by the real `wheelfarm publish`, as
    the farm's earlier runs left them: history, so the fake's rate limits are lifted for it
    and its windows start afresh after it."""
    house.mkdir(parents=True)
    for build_id in sorted(held):
        farm_wheel(farm.matrix, farm.builds[build_id], house, expansion=farm.expansion)
    limits = fake.primary_limit, fake.per_minute, fake.per_hour
    fake.primary_limit = fake.per_minute = fake.per_hour = 10**9
    env = {**farm.model.base_env, "GITHUB_TOKEN": "seed"}
    try:
        published = subprocess.run(
            [sys.executable, "-m", "wheelfarm", "publish", str(house), "--repo", fake.repo,
             "--api", fake.base, "--uploads", f"{fake.base}/uploads", "-q"],
            cwd=REPO.path, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
    finally:
        fake.primary_limit, fake.per_minute, fake.per_hour = limits
        fake.reset_windows()
    if published.returncode != 0:
        msg = f"publishing the {len(held):,} held builds exited {published.returncode}: "
        raise RuntimeError(msg + published.stderr.strip()[-2000:])
    shutil.rmtree(house)


def _name(farm: Farm, build_id: str, folder: Path) -> str:
    build = farm.builds[build_id]
    return farm_wheel(farm.matrix, build, folder, expansion=farm.expansion).name


def _published(fake: FakeGitHub) -> set[str]:
    from wheelfarm.github.client import GitHubClient
    from wheelfarm.github.releases import ReleasesSource

    client = GitHubClient(fake.repo, api=fake.base, token="simulated", scale=SCALE)
    return ReleasesSource(client).build_ids()


def _site(site: Path) -> set[str]:
    data = json.loads((site / "packages.json").read_text(encoding="utf-8"))
    return {w["build_id"] for w in data["wheels"]}


def every_feature(farm: Farm) -> dict[str, str]:
    """farm.yml's dispatch inputs for a small selection that holds every ABI kind, arch kind
    (`a`, `f`, `+PTX`), schema feature (a per-CUDA distribution name, one arch per binary, a
    farm_requires consumer of one producer and one of several, a split compile) and platform
    the catalog has, on one CUDA, two torch minors and two Pythons: what the synthetic wheels
    and the workflows must get right for the whole plan. A catalog change that adds a kind is in it at once."""
    cuda, torch, python = "cu130", ("2.12", "2.15"), ("3.12", "3.13")
    filters = Filters(cuda=(cuda,), torch=torch, python=python)
    plan = make_plan(farm.matrix, farm.expansion, filters=filters, one_run=False)
    split = {b.id for g in plan.groups if g.id in plan.splits for b in g.builds}
    packages = {str(p.name): p for p in farm.matrix.packages}

    def kinds(b: Build) -> set[str]:
        out = {f"abi:{b.abi}", f"platform:{b.platform}"}
        out |= {f"arch:{a.variant}" for a in b.archs.archs if a.variant}
        out |= {"arch:+PTX"} if any(a.ptx for a in b.archs.archs) else set()
        out |= {"distribution"} if b.distribution != b.package else set()
        out |= {"farm_requires"} if b.requires else set()
        # a consumer of several producer groups: its job downloads each producer's wheels
        several = len({farm.builds[r].package for r in b.requires}) > 1
        out |= {"farm_requires:several"} if several else set()
        out |= {"split"} if b.id in split else set()
        out |= {"one_arch_per_binary"} if packages[b.package].one_arch_per_binary else set()
        out |= {"some_archs_per_binary"} if packages[b.package].some_archs_per_binary else set()
        return out

    have: dict[str, set[str]] = {}
    for b in plan.todo:
        have.setdefault(b.package, set()).update(kinds(b))
    wanted = set().union(*have.values())
    chosen: list[str] = []
    while left := wanted - set().union(*(have[p] for p in chosen)):
        chosen.append(max(sorted(have), key=lambda p: len(have[p] & left)))
    producers = {farm.builds[r].package for p in chosen for b in plan.todo if b.package == p
                 for r in b.requires}  # fmt: skip
    return {
        "package": ",".join(sorted({*chosen, *producers})),
        "cuda": cuda,
        "torch": ",".join(torch),
        "python": ",".join(python),
        "platform": "",
    }
