"""The workflows' `run:` blocks are shell: executed here with bash, with a stand-in `wheelfarm`
on PATH that records its arguments (the real CLI runs them in test_github_scale)."""

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
        "plan --existing-releases octo/farm --format github",
        "plan --existing-releases octo/farm",
    ]
