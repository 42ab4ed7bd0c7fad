"""Every benchmark in benchmarks/ runs here at a tiny size, as a user runs it, and its last line
is checked for its shape: nothing else runs them, and one that no longer runs (a renamed
function, a matrix file its synthetic root lacks) went unnoticed until someone measured.

The sizes are the smallest that still go through every step; what the benchmarks measure at
their default size is unchanged. The three that compile build the demo extension for one arch
(no upstream package) and still take minutes, so they are `compiling_benchmark`: run by
`bash scripts/test.sh --run-benchmarks tests/integration/test_benchmarks.py`, not by CI."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ghsim.actions.commit import export
from ghsim.synthetic import farm_wheel
from tests.integration.conftest import wheelfarm
from tests.roots import REPO
from wheelfarm.farm import TargetQuery, choose_target
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

pytestmark = pytest.mark.integration

BENCHMARKS = REPO.path / "benchmarks"
NUMBER = r"\d+(?:\.\d+)?"
ARCH = "9.0"  # the arch the split-compile test builds the demo for

# first_run.py's smoke: a torch-free build (which a running farm already holds, so only the cold
# replay builds it) and the demo's torch 2.15 builds, cu130 and cu132 from one compile, no split
# compile, through every tag run; 1 MB wheels to publish
SMOKE = ["--package", "torch-memory-saver,wheelfarm-demo", "--platform", "linux_aarch64",
         "--cuda", "cu13*", "--python", "3.12", "--torch", "2.15*", "--big-mb", "1"]  # fmt: skip


def replayed(group: int) -> str:
    """first_run.py's line for a replay that published every planned wheel (one or more),
    `group` the number of its first regex group."""
    return (
        rf"published=([1-9]\d*)/\{group} lost=0 limits_hit=0 wall_days={NUMBER} "
        rf"runner_hours=\d+ tier1_hours={NUMBER} tier1_windows_hours=(?:{NUMBER}|inf) "
        rf"longest_run_days={NUMBER} busy_runners={NUMBER}"
    )


CASES = [
    pytest.param(
        "plan_grid.py",
        ["--packages", "4", "--runs", "1"],  # one of each ABI kind
        rf"^plan: shipped {NUMBER}s  synthetic {NUMBER}s \(target < 1 s each\)$",
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
        SMOKE,
        rf"^warm: {replayed(1)}\n{replayed(2)}$",  # the warm replay's line, then the cold one's
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
    last = "\n".join(lines[-1 - last_line.count("\\n") :])  # as many lines as the pattern has
    assert re.fullmatch(last_line, last), f"{script}'s last lines: {last!r}"


def _files(tree: Path) -> dict[str, tuple[int, int]]:
    """Every file under `tree` but bytecode, with its size and mtime."""
    return {
        str(p.relative_to(tree)): (p.lstat().st_size, p.lstat().st_mtime_ns)
        for p in tree.rglob("*")
        if not p.is_dir() and "__pycache__" not in p.parts
    }


def test_the_smoke_replay_after_the_local_farm_leaves_its_checkout_alone(
    tmp_path: Path, cache_dir: Path
) -> None:
    """README's first command leaves site/ and wheelhouse/ in the checkout; the replay's jobs
    each check out the commit, so they never see nor write those, and every wheel is published
    (it once found the checkout's wheels in every job and published none, exiting 0). The
    checkout here has no .venv/ either: the benchmark runs with this interpreter. The local
    farm's store holds the demo as a synthetic wheel (ghsim/synthetic.py): `wheelfarm farm`
    then plans, finds it built, indexes and prints, with no nvcc compile; what is under test is
    the tree it leaves, not the build."""
    clone = export(REPO.path, tmp_path / "clone")  # the tracked files, as a fresh clone holds
    subprocess.run(["git", "init", "-q", clone], check=True)
    bridge = Path(".wheelfarm", "node", "actions-bridge.cjs")  # scripts/test.sh's, built once
    (clone / bridge).parent.mkdir(parents=True)
    shutil.copy(REPO.path / bridge, clone / bridge)
    matrix = load_matrix(REPO)
    expansion = expand(matrix)
    demo = choose_target(matrix, expansion, TargetQuery(local=True)).build
    (clone / "wheelhouse").mkdir()  # the local store
    farm_wheel(matrix, demo, clone / "wheelhouse", expansion=expansion)
    farmed = wheelfarm("farm", "--cache", cache_dir, cwd=clone)
    assert "0 to build, 1 already in" in farmed.stderr
    before = _files(clone)
    assert any(n.startswith("site/") for n in before) and any(n.endswith(".whl") for n in before)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
    result = subprocess.run(
        [sys.executable, clone / "benchmarks" / "first_run.py", *SMOKE],
        cwd=clone, env=env, capture_output=True, text=True, timeout=3600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    last = "\n".join(result.stdout.strip().splitlines()[-2:])
    assert re.fullmatch(rf"warm: {replayed(1)}\n{replayed(2)}", last), last
    assert _files(clone) == before
