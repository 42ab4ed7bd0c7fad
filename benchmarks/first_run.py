"""A farm's first real tag run, from the workflow files, through the Actions model
(ghsim/actions/: GitHub's own parser and evaluator, every `run:` block in bash, the documented
limits on a scaled clock), against the fake GitHub REST API, on the Free plan's 20 runners, with
the faults of a real first run: the first run cancelled after a day, builds that fail once and
are rerun ("Re-run failed jobs"), uploads that break mid-way, a lost Pages deploy, and tags that
arrive together. Then publish's peak memory with three 300 MB wheels.

Run from the repository root: python benchmarks/first_run.py [--package GLOB] [--cuda GLOB]
[--torch GLOB] [--python GLOB] [--platform GLOB] [--big-mb MB] (default: the whole shipped plan,
pushed as tags, and 300 MB wheels, which the memory goal is for; any GLOB dispatches farm.yml
for that selection instead, as its inputs do; a smoke run takes a build or two and small
wheels). Its last line is
`published=N/N lost=0 limits_hit=0 wall_days=D runner_hours=H tier1_hours=T
tier1_windows_hours=W longest_run_days=R busy_runners=B`: T the hours from the first tag until
the index holds every tier-1 wheel (farm.yaml pool.tiers), W the same for win_amd64's, R the
longest farm run, B the mean of busy runners while any job waited (ADR 17)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # ghsim/: the fake GitHub and the Actions model

from ghsim.actions.scenario import SCALE, first_run  # noqa: E402
from ghsim.fakegithub import FakeGitHub, fake_github  # noqa: E402
from ghsim.roots import REPO  # noqa: E402
from ghsim.synthetic import farm_wheel  # noqa: E402
from wheelfarm.matrix.expand import expand  # noqa: E402
from wheelfarm.matrix.load import load_matrix  # noqa: E402
from wheelfarm.matrix.plan import make_plan  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser()
    axes = ("package", "cuda", "torch", "python", "platform")  # farm.yml's dispatch inputs
    for axis in axes:
        parser.add_argument(f"--{axis}", default="", help=f"dispatch for these {axis} GLOBs only")
    parser.add_argument("--cancel-after-hours", type=float, default=24.0)
    parser.add_argument("--big-mb", type=int, default=300, help="size of publish's three wheels")
    args = parser.parse_args()
    inputs = None
    if any(getattr(args, axis) for axis in axes):
        inputs = {axis: getattr(args, axis) for axis in axes}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        outcome = first_run(
            Path(tmp) / "run", inputs=inputs, cancel_after_minutes=args.cancel_after_hours * 60
        )
        took = time.perf_counter() - started
        rss = peak_publish_rss(Path(tmp), args.big_mb)
    print(f"modelled in {took:.0f}s real time (GitHub REST clock x{SCALE:.0f})")
    print(f"farm runs: {outcome.runs} (reruns of failed jobs: {outcome.reruns})")
    print(f"largest job output: {outcome.max_output_bytes:,} bytes as GitHub counts them (UTF-16)")
    per_run = sorted(outcome.artifacts_per_run.values(), reverse=True)
    print(
        f"artifacts per run: {per_run} (before, counted from a cold plan: {artifacts_before():,})"
    )
    print(
        f"artifact REST requests (listings, downloads with a token): {outcome.artifact_requests:,}"
    )
    for hit in outcome.limits:
        print(f"limit hit: {hit.line()}")
    print(f"peak publish RSS with three {args.big_mb} MB wheels: {rss:.0f} MB (goal <= 100)")
    print(outcome.line())


if __name__ == "__main__":
    main()
