"""A farm's first real tag run, from the workflow files, through the Actions model
(ghsim/actions/: GitHub's own parser and evaluator, every `run:` block in bash, the documented
limits on a scaled clock), against the fake GitHub REST API, on the Free plan's 20 runners, with
the faults of a real first run: the first run cancelled after a day, builds that fail once and
are rerun ("Re-run failed jobs"), uploads that break mid-way, a lost Pages deploy, and tags that
arrive together. Then publish's peak memory with three 300 MB wheels.

Two replays of the selection: warm, against Releases that already hold what a running farm built
before the selection's newest torch minor (`--torch '2.15*'`: every build of torch <= 2.14, so
the torch-free and stable-ABI builds serving 2.15 are not rebuilt), then cold, from empty
Releases. Each modelled job checks out its own clean copy of this repository's commit (its
tracked files; ghsim/actions/commit.py): nothing in the checkout's site/ or wheelhouse/ is seen
or written.

Run from the repository root: python benchmarks/first_run.py [--package GLOB] [--cuda GLOB]
[--torch GLOB] [--python GLOB] [--platform GLOB] [--big-mb MB] [--only warm|cold] (default: the
whole shipped plan, pushed as tags, and 300 MB wheels, which the memory goal is for; any GLOB
dispatches farm.yml for that selection instead, as its inputs do; a smoke run takes a build or
two and small wheels; `--only` runs one replay, so two processes measure both at once).
Its last two lines are the warm replay's, then the cold one's:
`warm: published=N/N ...` and
`published=N/N lost=0 limits_hit=0 wall_days=D runner_hours=H tier1_hours=T
tier1_windows_hours=W longest_run_days=R busy_runners=B`: T the hours from the first tag until
the index holds every tier-1 wheel (farm.yaml pool.tiers), W the same for win_amd64's, R the
longest farm run, B the mean of busy runners while any job waited (ADR 17). It exits 1, naming
why on stderr, when either replay left a planned wheel unpublished or off the index, or a farm
run failed; 2 when the model cannot run its jobs (no git checkout, an interpreter without
wheelfarm)"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # ghsim/: the fake GitHub and the Actions model

try:
    from ghsim.actions.commit import SetupError
    from ghsim.actions.scenario import SCALE, Outcome, first_run
    from ghsim.fakegithub import FakeGitHub, fake_github
    from ghsim.roots import REPO
    from ghsim.synthetic import farm_wheel
    from wheelfarm.matrix.expand import expand
    from wheelfarm.matrix.load import load_matrix
    from wheelfarm.matrix.plan import make_plan
except ModuleNotFoundError as missing:  # another interpreter than the checkout's venv
    sys.exit(
        f"first_run.py: {sys.executable} cannot import {missing.name}: run it with the venv "
        "that `pip install -e '.[build,test]'` made (README's first command: .venv/bin/python)"
    )

# Started from this (large) process, a child's ru_maxrss would include our pages (exec keeps the
# old high-water mark): a bare interpreter starts it and reports that child's own peak in KB.
MEASURE = (
    "import os, sys; pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ); "
    "_, status, usage = os.wait4(pid, 0); print(usage.ru_maxrss); "
    "sys.exit(os.waitstatus_to_exitcode(status))"
)


def peak_publish_rss(tmp: Path, big_mb: int) -> float:
    """MB of peak RSS of `wheelfarm publish` uploading three `big_mb` MB wheels."""
    matrix = load_matrix(REPO)
    builds = sorted(expand(matrix).builds, key=lambda b: b.id)[:3]
    house = tmp / "big"
    house.mkdir()
    payload = big_mb * 1024**2
    for b in builds:
        farm_wheel(matrix, b, house, payload=payload)
    with fake_github(FakeGitHub(scale=SCALE)) as gh:
        measured = subprocess.run(
            [sys.executable, "-c", MEASURE, Path(sys.executable).parent / "wheelfarm", "publish",
             house, "--repo", gh.repo, "--api", gh.base, "--uploads", f"{gh.base}/uploads", "-q"],
            cwd=ROOT, capture_output=True, text=True, check=True,
            env={"PATH": str(Path(sys.executable).parent), "GITHUB_TOKEN": "t",
                 "WHEELFARM_GITHUB_TIME_SCALE": str(SCALE)},
        )  # fmt: skip
    return int(measured.stdout.split()[-1]) / 1024


def artifacts_before() -> int:
    """What one first run of the old workflows would have made (had its plan job passed): a
    wheel and a log artifact per build job, a cache per compile shard, on a cold plan with a job
    per build (before group jobs, ADR 16)."""
    matrix = load_matrix(REPO)
    plan = make_plan(matrix, expand(matrix), grouped=False)
    return 2 * len(plan.todo) + sum(plan.splits.values())


def replay(tmp: Path, inputs: dict[str, str] | None, hours: float, *, warm: bool) -> Outcome:
    """One replay, its report printed (`warm:` before each of a warm one's lines but the last)."""
    started = time.perf_counter()
    outcome = first_run(tmp, inputs=inputs, cancel_after_minutes=hours * 60, warm=warm)
    took = time.perf_counter() - started
    lead = "warm: " if warm else ""
    if warm:
        print(
            f"{lead}Releases held {outcome.held:,} builds before the first tag (each build of "
            "a torch minor older than the selection's newest, on its other axes)"
        )
    print(f"{lead}modelled in {took:.0f}s real time (GitHub REST clock x{SCALE:.0f})")
    print(f"{lead}farm runs: {outcome.runs} (reruns of failed jobs: {outcome.reruns})")
    most = outcome.max_output_bytes
    print(f"{lead}largest job output: {most:,} bytes as GitHub counts them (UTF-16)")
    per_run = sorted(outcome.artifacts_per_run.values(), reverse=True)
    print(f"{lead}artifacts per run: {per_run}")
    asked = outcome.artifact_requests
    print(f"{lead}artifact REST requests (listings, downloads with a token): {asked:,}")
    for hit in outcome.limits:
        print(f"{lead}limit hit: {hit.line()}")
    return outcome


def failures(outcome: Outcome, name: str) -> list[str]:
    """Why a replay failed, one line each: a planned wheel not published or lost, a farm run
    that did not end well (the first run's and a replaced run's cancellations are the faults')."""
    why = []
    if outcome.published != outcome.planned:
        left = outcome.planned - outcome.published
        why.append(f"{name}: {left} of {outcome.planned} planned wheels unpublished")
    if outcome.lost:
        why.append(f"{name}: {outcome.lost} wheels lost (built, but unpublished or unindexed)")
    failed = sorted(i for i, c in outcome.runs.items() if c not in {"success", "cancelled"})
    if failed:
        why.append(f"{name}: farm runs {failed} ended {[outcome.runs[i] for i in failed]}")
    why += [f"{name}: {note}" for note in outcome.notes[:5]] if why else []
    return why


def main() -> int:
    parser = argparse.ArgumentParser()
    axes = ("package", "cuda", "torch", "python", "platform")  # farm.yml's dispatch inputs
    for axis in axes:
        parser.add_argument(f"--{axis}", default="", help=f"dispatch for these {axis} GLOBs only")
    parser.add_argument("--cancel-after-hours", type=float, default=24.0)
    parser.add_argument("--big-mb", type=int, default=300, help="size of publish's three wheels")
    parser.add_argument(
        "--only", choices=("warm", "cold"), help="one replay (two processes measure both at once)"
    )
    args = parser.parse_args()
    inputs = None
    if any(getattr(args, axis) for axis in axes):
        inputs = {axis: getattr(args, axis) for axis in axes}
    outcomes: dict[str, Outcome] = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for name in ("warm", "cold"):
                if args.only in (None, name):
                    hours = args.cancel_after_hours
                    outcomes[name] = replay(Path(tmp) / name, inputs, hours, warm=name == "warm")
        except SetupError as err:
            print(f"first_run.py: {err}", file=sys.stderr)
            return 2
        rss = peak_publish_rss(Path(tmp), args.big_mb)
    print(f"artifacts before, counted from a cold plan: {artifacts_before():,}")
    print(f"peak publish RSS with three {args.big_mb} MB wheels: {rss:.0f} MB (goal <= 100)")
    if "warm" in outcomes:
        print(f"warm: {outcomes['warm'].line()}")
    if "cold" in outcomes:
        print(outcomes["cold"].line())
    why = [line for name, o in outcomes.items() for line in failures(o, name)]
    for line in why:
        print(f"first_run.py: {line}", file=sys.stderr)
    return 1 if why else 0


if __name__ == "__main__":
    sys.exit(main())
