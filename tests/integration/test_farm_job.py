"""scripts/farm-job.sh, the one entry point of a Linux build job, run here the way build.yml
runs it in the pinned container (this machine's CUDA toolkit stands in for the one it installs
there): the demo built twice through it, the second time from a fresh work folder on the first
build's compiler cache, as a rerun on a new runner restores it; and a job past its deadline.
tests/unit/test_workflows.py holds the workflow to this script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.roots import REPO
from wheelfarm.builder.toolchain import find_cuda_home
from wheelfarm.core.errors import BuildError
from wheelfarm.core.proc import call

pytestmark = pytest.mark.integration
SCRIPT = REPO.path / "scripts" / "farm-job.sh"
CP = f"cp{sys.version_info[0]}{sys.version_info[1]}"
TARGET = f"wheelfarm-demo-0.1.0-cu130torch2.14-{CP}-linux_x86_64"
CUDA_HOME = find_cuda_home(dict(os.environ))
needs_cuda = pytest.mark.skipif(CUDA_HOME is None, reason="no CUDA toolkit on this machine")


def _job(tmp: Path, cache: Path, run: str, *, started: float) -> subprocess.CompletedProcess[str]:
    """One job as the workflow starts it, with this checkout's venv and toolkit."""
    env = {
        **os.environ,
        "TARGET": TARGET,
        "CUDA": "cu130",
        "PLATFORM": "linux_x86_64",
        "JOB_STARTED": str(int(started)),
        "JOB_MINUTES": "360",
        "WHEELFARM_CACHE": str(cache),  # the shared torch env
        "CCACHE_DIR": str(tmp / "ccache"),  # cold at first, as on a new runner
        "CCACHE_LOGFILE": str(tmp / f"ccache-{run}.log"),
        "CUDA_HOME": str(CUDA_HOME),
        "WHEELFARM_VENV": sys.prefix,
        "WHEELFARM_PLAT": "auto",  # this machine's gcc is newer than manylinux_2_28's
        "WHEELFARM_OUT": str(tmp / f"out-{run}"),
        "WHEELFARM_WORK": str(tmp / f"work-{run}"),
    }
    return subprocess.run(["bash", SCRIPT], env=env, capture_output=True, text=True, check=False)


def _record(out: Path) -> dict[str, object]:
    (record,) = out.glob("*.build.json")
    return dict(json.loads(record.read_text()))


@needs_cuda
def test_a_rerun_through_the_entry_point_hits_the_compiler_cache(
    tmp_path: Path, cache_dir: Path
) -> None:
    first = _job(tmp_path, cache_dir, "1", started=time.time())
    assert first.returncode == 0, first.stderr[-4000:]
    cold = _record(tmp_path / "out-1")["timing"]["ccache"]  # type: ignore[index]
    log = (tmp_path / "ccache-1.log").read_text()
    # both compilers went through ccache: binding.cpp (g++) and kernels.cu (nvcc)
    assert "Compiler type: gcc" in log and "Compiler type: nvcc" in log
    assert cold == {"hits": 0, "misses": 2}

    second = _job(tmp_path, cache_dir, "2", started=time.time())
    assert second.returncode == 0, second.stderr[-4000:]
    warm = _record(tmp_path / "out-2")
    counts = warm["timing"]["ccache"]  # type: ignore[index]
    hits, misses = counts["hits"], counts["misses"]
    assert hits / (hits + misses) >= 0.9, counts
    assert "/ccache-shims/" in warm["environment"]["CXX"]  # type: ignore[index]
    assert "/ccache-shims/" in warm["environment"]["CUDA_HOME"]  # type: ignore[index]


@needs_cuda
def test_a_job_past_its_deadline_stops_before_compiling(tmp_path: Path, cache_dir: Path) -> None:
    late = _job(tmp_path, cache_dir, "late", started=time.time() - 6 * 3600)
    assert late.returncode == BuildError.exit_code, late.stderr[-2000:]
    assert "the deadline passed before the compile started" in late.stderr
    assert not list((tmp_path / "out-late").glob("*.whl"))


def test_a_command_past_its_deadline_is_killed_with_what_it_started(tmp_path: Path) -> None:
    pid = tmp_path / "pid"
    started = time.monotonic()
    with pytest.raises(BuildError, match="stopped at its deadline after 0m0"):
        call(["sh", "-c", f"sleep 120 & echo $! > {pid}; wait"], deadline=time.time() + 2)
    assert time.monotonic() - started < 30
    child = int(pid.read_text())
    # the signal reaches the grandchild when it is next scheduled: on a loaded machine, later
    alive = time.monotonic() + 10
    while _running(child):
        assert time.monotonic() < alive, "the command's child outlived its deadline by 10 s"
        time.sleep(0.1)


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
