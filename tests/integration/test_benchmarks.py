"""Every benchmark in benchmarks/ runs here at a tiny size, as a user runs it, and its last line
is checked for its shape: nothing else runs them, and one that no longer runs (a renamed
function, a matrix file its synthetic root lacks) went unnoticed until someone measured.

The sizes are the smallest that still go through every step; what the benchmarks measure at
their default size is unchanged. The three that compile build the demo extension for one arch
(no upstream package) and still take minutes, so they are `compiling_benchmark`: run by
`bash scripts/test.sh --run-benchmarks tests/integration/test_benchmarks.py`, not by CI."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.roots import REPO

pytestmark = pytest.mark.integration

BENCHMARKS = REPO.path / "benchmarks"
NUMBER = r"\d+(?:\.\d+)?"
ARCH = "9.0"  # the arch the split-compile test builds the demo for

CASES = [
    pytest.param(
        "plan_grid.py",
        ["--packages", "4"],  # one of each ABI kind
        rf"^load {NUMBER}s  expand {NUMBER}s  plan\+shard\+github {NUMBER}s  "
        rf"total {NUMBER}s \(target < 1 s\)$",
        id="plan_grid",
    ),
    pytest.param(
        "site_100k.py",
        ["60"],
        rf"^first build {NUMBER}s \(target < 10 s\); no-change rerun {NUMBER}s, "
        rf"0 files rewritten; rerun/first = {NUMBER}$",
        id="site_100k",
    ),
    pytest.param(
        "index_vs_simple503.py",
        ["10", "1"],
        rf"^wheelfarm/simple503 time={NUMBER} memory={NUMBER} rerun={NUMBER}s "
        rf"changed_rerun={NUMBER}s changed_memory={NUMBER}$",
        id="index_vs_simple503",
    ),
    pytest.param(
        "first_run.py",
        # one build (torch-free, no split compile) through every tag run; 1 MB wheels to publish
        [
            "--package",
            "torch-memory-saver",
            "--platform",
            "linux_aarch64",
            "--cuda",
            "cu130",
            "--big-mb",
            "1",
        ],
        rf"^published=(\d+)/\1 lost=0 limits_hit=0 wall_days={NUMBER} runner_hours=\d+ "
        rf"tier1_hours={NUMBER} tier1_windows_hours=({NUMBER}|inf) longest_run_days={NUMBER} "
        rf"busy_runners={NUMBER}$",
        id="first_run",
    ),
    pytest.param(
        "build_cache.py",
        ["--archs", ARCH],
        rf"^warm/cold compile = {NUMBER}; whole build = {NUMBER} \(goal <= 0\.2\)$",
        id="build_cache",
        marks=pytest.mark.compiling_benchmark,
    ),
    pytest.param(
        "sharded_build.py",
        ["--package", "wheelfarm-demo", "--archs", ARCH, "--shards", "2"],
        rf"^link/unsharded={NUMBER} shards_cpu/unsharded={NUMBER} hits=100\.0%$",
        id="sharded_build",
        marks=pytest.mark.compiling_benchmark,
    ),
    pytest.param(
        "python_reuse.py",
        ["--package", "wheelfarm-demo", "--archs", ARCH],
        rf"^second/first={NUMBER} nvcc_hits=100\.0% wheels_ok=2$",
        id="python_reuse",
        marks=pytest.mark.compiling_benchmark,
    ),
]


@pytest.mark.parametrize(("script", "args", "last_line"), CASES)
def test_benchmark_runs_at_a_tiny_size(script: str, args: list[str], last_line: str) -> None:
    result = subprocess.run(
        [sys.executable, BENCHMARKS / script, *args],
        cwd=REPO.path,
        capture_output=True,
        text=True,
        timeout=3600,  # a backstop: the compiling two took 11 and 18 minutes on 2 busy cores
        check=False,
    )
    assert result.returncode == 0, f"{script} exited {result.returncode}:\n{result.stderr[-4000:]}"
    lines = result.stdout.strip().splitlines()
    assert lines, f"{script} printed nothing:\n{result.stderr[-4000:]}"
    assert re.fullmatch(last_line, lines[-1]), f"{script}'s last line: {lines[-1]!r}"
