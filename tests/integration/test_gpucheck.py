"""Kernel checks for real: the demo built with nvcc and its check's CPU path run by `wheelfarm
verify --cpu` in its target env; `verify --gpu` here, without a GPU, exits 11 in one line;
every check module imported in the shared torch env and its CPU path run where its package is
there (else skipped, with the reason); and the harness's failures (a wrong answer, an
exception, a crash) reported as such by builder/gpucheck.py."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import DemoBuild, fresh_venv, wheelfarm
from tests.roots import REPO
from wheelfarm.builder import driver, gpucheck
from wheelfarm.core.root import FarmRoot

pytestmark = pytest.mark.integration
CHECKS = gpucheck.check_packages(REPO)


def test_the_demos_check_runs_its_cpu_path_in_its_target_env(demo_build: DemoBuild) -> None:
    result = wheelfarm("verify", demo_build.wheel, "--local", "--cpu", cwd=REPO.path)
    lines = result.stdout.splitlines()
    assert "pass  saxpy float64: max abs 0 (bound 1e-12)" in lines
    assert any(line.startswith("pass  row_sum float64: max abs") for line in lines)
    assert lines[-1] == f"kernels ok: {demo_build.wheel.name} on the CPU"


@pytest.mark.skipif(driver.driver_loads(), reason="this machine has a GPU driver")
def test_verify_gpu_without_a_gpu_exits_11_in_one_line(demo_build: DemoBuild) -> None:
    result = wheelfarm("verify", demo_build.wheel, "--local", "--gpu", check=False, cwd=REPO.path)
    assert result.returncode == 11
    assert result.stderr.count("\n") == 1
    assert "no NVIDIA GPU here" in result.stderr
    assert "kernels" not in demo_build.record  # nothing was written


def _importable(py: Path, module: str) -> bool:
    found = subprocess.run(
        [py, "-c", f"import importlib.util as u, sys; sys.exit(u.find_spec({module!r}) is None)"],
        capture_output=True, check=False,
    )  # fmt: skip
    return found.returncode == 0


# the module a check imports first, where it is not the check's own name
FIRST = {"simple_knn": "simple_knn._C", "nvdiffrec_render": "nvdiffrec_render.renderutils"}


@pytest.mark.parametrize("name", CHECKS)
def test_each_check_imports_in_a_torch_env_and_runs_its_cpu_path(
    name: str, torch_env: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """CI has torch and the demo's wheel but not the catalog's (a GPU runner installs those):
    each module must import without its package, and runs where its package is installed
    (the demo here; torch-scatter and torch-spline-conv in test_gpucheck_cpu_kernels.py)."""
    py = fresh_venv(tmp_path / "venv", torch_env)
    if name == "wheelfarm_demo":
        demo: DemoBuild = request.getfixturevalue("demo_build")
        subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", demo.wheel], check=True)
    log = tmp_path / "check.log"
    ran = gpucheck.run_check(py, REPO, name, "cpu", env={}, log=log)
    if ran.skipped:
        pytest.skip(f"{name} has no CPU path: {ran.skipped}")
    assert ran.reference, log.read_text()  # the module imported and named its reference
    module = FIRST.get(name, name)
    if not _importable(py, module):
        assert ran.error is not None
        assert f"No module named '{module.split('.')[0]}'" in ran.error
        pytest.skip(f"{name}'s CPU path needs its wheel, which CI does not build")
    assert ran.passed, ran.failure


BROKEN = {
    "wrong": "    check.close('sum', torch.ones(3), torch.zeros(3), atol=1e-6)\n",
    "shape": "    check.close('shape', torch.ones(3), torch.ones(4), atol=1.0)\n",
    "raises": "    raise RuntimeError('CUDA error: no kernel image is available')\n",
    "crashes": "    import os\n    os.abort()\n",
    "silent": "    pass\n",
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_failing_check_is_a_failed_run_saying_why(
    kind: str, torch_env: Path, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    shutil.copytree(REPO.path / "checks", root / "checks", ignore=shutil.ignore_patterns("[!_]*"))
    (root / "checks" / "broken.py").write_text(
        "import torch\nCPU = True\nREFERENCE = 'none: a test'\n"
        f"def run(check, device):\n{BROKEN[kind]}",
        encoding="utf-8",
    )
    py = torch_env / "bin" / "python"
    ran = gpucheck.run_check(py, FarmRoot(root), "broken", "cpu", env={}, log=tmp_path / "log")
    assert not ran.passed
    want = {
        "wrong": "sum: rtol 0.0, atol 1e-06",
        "shape": "shape: shape (3,) against the reference's (4,)",
        "raises": "RuntimeError: CUDA error: no kernel image is available",
        "crashes": "crashed: killed by SIGABRT (signal 6)",
        "silent": "the check reported no op",
    }
    assert ran.failure == want[kind]


# the ops of flash-attn's, flash_attn_3's and xformers' checks, in the order they report them
ATTENTION_OPS = [
    "flash_attn_func causal=False", "flash_attn_func causal=True", "flash_attn_kvpacked_func",
    "flash_attn_func causal=False", "flash_attn_func causal=True",
    "memory_efficient_attention", "sparse24_largest_mask_2d: groups over 2 of 4",
    "sparse24_largest_mask_2d keeps values",
]  # fmt: skip


@pytest.mark.parametrize("wrong", [False, True], ids=["as-kernels-round", "wrong"])
def test_the_attention_checks_pass_a_kernel_that_rounds_as_theirs_and_fail_a_wrong_one(
    wrong: bool, torch_env: Path, tmp_path: Path
) -> None:
    """Their tolerances, measured on the CPU: fp16 and bf16 output rounded once (a causal row of
    a few values is near 4, where a bf16 ulp is 3e-2) passes; a softmax scaled by 1.1, and a 2:4
    mask keeping 3 of 4, fail. kernel_stand_ins.py says how its stand-ins round."""
    root = tmp_path / "root"
    shutil.copytree(REPO.path / "checks", root / "checks", ignore=shutil.ignore_patterns("*.pyc"))
    source = Path(__file__).with_name("kernel_stand_ins.py").read_text(encoding="utf-8")
    (root / "checks" / "stand_ins.py").write_text(
        source.replace("\nWRONG = False\n", f"\nWRONG = {wrong}\n"), encoding="utf-8"
    )
    py = torch_env / "bin" / "python"
    log = tmp_path / "log"
    ran = gpucheck.run_check(py, FarmRoot(root), "stand_ins", "cpu", env={}, log=log)
    assert ran.error is None, log.read_text()
    assert [op.name for op in ran.ops] == ATTENTION_OPS
    if not wrong:
        assert ran.passed, ran.failure
    else:  # every compared op fails; the finite-values op has nothing to compare
        assert [op.passed for op in ran.ops] == [False] * 7 + [True], ran.ops
