"""The workflows' `run:` blocks are shell: executed here with bash, with a stand-in `wheelfarm`
on PATH that records its arguments (the real CLI runs them in the Actions model, test_actions_model)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.workflows import run_block

pytestmark = pytest.mark.integration


AXES = ("PACKAGE", "CUDA", "TORCH", "PYTHON", "PLATFORM")


def _plan_args(tmp_path: Path, **inputs: str) -> list[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = tmp_path / "calls"
    fake = bin_dir / "wheelfarm"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {calls}\n')
    fake.chmod(0o755)
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_REPOSITORY": "octo/farm",
        **dict.fromkeys(AXES, ""),
        **inputs,
    }
    script = run_block("farm.yml", "plan", "plan")
    subprocess.run(["bash", "-e", "-c", script], env=env, check=True, cwd=tmp_path)
    return calls.read_text().splitlines()


def test_dispatch_filters_reach_the_plan(tmp_path: Path) -> None:
    calls = _plan_args(tmp_path, PACKAGE="flash-attn", CUDA="cu130", PLATFORM="win_amd64")
    assert len(calls) == 2
    for call in calls:
        assert "--existing-releases octo/farm" in call
        assert "--package flash-attn --cuda cu130 --platform win_amd64" in call
        assert "--torch" not in call and "--python" not in call


def test_no_filter_plans_everything(tmp_path: Path) -> None:
    calls = _plan_args(tmp_path)
    assert calls == [
        "plan --existing-releases octo/farm --format github --plan-file plan.json",
        "plan --existing-releases octo/farm",
    ]


@pytest.mark.parametrize(
    ("farm_index", "expected"),
    [("", "https://octo.github.io/farm/"), ("https://wheels.example/", "https://wheels.example/")],
)
def test_the_build_job_finds_farm_wheels_on_the_repositorys_own_index(
    tmp_path: Path, farm_index: str, expected: str
) -> None:
    """scripts/farm-job.sh (the container's one entry point) passes --farm-wheels: the
    WHEELFARM_INDEX_URL variable, else the Pages site the real `pages-url` computes."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    calls = tmp_path / "calls"
    real = subprocess.run(
        ["wheelfarm", "pages-url", "--repo", "octo/farm"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    fake = venv / "bin" / "wheelfarm"
    fake.write_text(
        f'#!/bin/sh\nif [ "$1" = pages-url ]; then echo {real}; exit; fi\n'
        f'printf "%s\\n" "$*" >> {calls}\n'
    )
    fake.chmod(0o755)
    env = {
        "PATH": os.environ["PATH"],
        "TARGET": "t",
        "CUDA": "cu130",
        "PLATFORM": "linux_x86_64",
        "JOB_STARTED": "0",
        "JOB_MINUTES": "360",
        "WHEELFARM_CACHE": str(tmp_path / "cache"),
        "CUDA_HOME": str(tmp_path),  # no toolkit install
        "WHEELFARM_VENV": str(venv),
        "WHEELFARM_OUT": str(tmp_path / "out"),
        "GITHUB_REPOSITORY": "octo/farm",
        "FARM_INDEX": farm_index,
    }
    script = Path(__file__).parents[2] / "scripts" / "farm-job.sh"
    subprocess.run(["bash", script], env=env, check=True, cwd=tmp_path)
    (call,) = calls.read_text().splitlines()
    assert call.startswith("build t ") and call.endswith(f"--farm-wheels {expected}")
