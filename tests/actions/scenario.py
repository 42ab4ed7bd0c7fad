"""A farm's first real run, through the Actions model, with the faults of a real one: the first
run is cancelled part-way, some builds fail and are rerun ("Re-run failed jobs"), uploads break,
the first Pages deploy is lost, and tags arrive together (two at once, then a third while the
second waits). benchmarks/first_run.py runs it on the whole shipped plan; the integration test
on one package."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.actions.farm import Farm, Faults
from tests.actions.model import LimitHit, Run
from tests.fakegithub import FakeGitHub, fake_github
from tests.synthetic import farm_wheel

SCALE = 1000.0  # the fake GitHub's hour passes in 3.6 s


@dataclass
class Outcome:
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

    def line(self) -> str:
        return (
            f"published={self.published}/{self.planned} lost={self.lost} "
            f"limits_hit={len(self.limits)} wall_days={self.wall_days:.1f} "
            f"runner_hours={self.runner_hours:.0f}"
        )


def first_run(
    work: Path,
    *,
    workflows: str = "",
    inputs: dict[str, Any] | None = None,
    failing: int = 2,
    broken_uploads: int = 3,
    cancel_after_minutes: float = 24 * 60,
) -> Outcome:
    """The run, then reruns and later tags until every farm run has ended well (at most 4
    rounds of "Re-run failed jobs")."""
    fake = FakeGitHub(scale=SCALE)
    with fake_github(fake):
        farm = Farm(fake, work, workflows=workflows, faults=Faults(lose_deploys=1))
        wanted = _wanted(farm, inputs)
        names = work / "names"
        names.mkdir(parents=True)
        fake.break_uploads = {_name(farm, b, names) for b in sorted(wanted)[-broken_uploads:]}
        model = farm.model
        model.schedules()  # pages.yml's daily run fires on the model's clock

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
    return Outcome(
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
    )


def _wanted(farm: Farm, inputs: dict[str, Any] | None) -> set[str]:
    """What the plan of the first run selects (deferred builds come in a later farm run)."""
    from wheelfarm.matrix.expand import expand
    from wheelfarm.matrix.plan import Filters, make_plan

    expansion = expand(farm.matrix)
    filters = Filters(**{k: tuple(v.split(",")) for k, v in (inputs or {}).items() if v})
    return {b.id for b in make_plan(farm.matrix, expansion, filters=filters).todo}


def _name(farm: Farm, build_id: str, folder: Path) -> str:
    build = farm.builds[build_id]
    return farm_wheel(build, farm.matrix.farm.platforms[build.platform].wheel_platform, folder).name


def _published(fake: FakeGitHub) -> set[str]:
    from wheelfarm.github.client import GitHubClient
    from wheelfarm.github.releases import ReleasesSource

    client = GitHubClient(fake.repo, api=fake.base, token="simulated", scale=SCALE)
    return ReleasesSource(client).build_ids()


def _site(site: Path) -> set[str]:
    data = json.loads((site / "packages.json").read_text(encoding="utf-8"))
    return {w["build_id"] for w in data["wheels"]}
