"""Build jobs keep to their runner's time limit counted from the job's start, save the compiler
cache only when they did not finish, clean only GitHub-hosted hosts, and run the one entry
point the integration tests run (scripts/farm-job.sh) in the pinned image."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.roots import REPO
from wheelfarm.cli import main
from wheelfarm.core import proc
from wheelfarm.core.errors import UsageError
from wheelfarm.farm import job_deadline
from wheelfarm.github.actions import SAVE_MARGIN_MINUTES

WORKFLOWS = Path(__file__).parents[2] / ".github" / "workflows"
LIMIT = "${{ inputs.limit_minutes > 0 && inputs.limit_minutes || matrix.target.timeout }}"
# the build's own deadline: the runner's limit, capped so that its step fits GitHub's 360 minutes
JOB_MINUTES = (
    "${{ inputs.limit_minutes > 0 && (inputs.limit_minutes > 375 && 375 || inputs.limit_minutes)"
    " || matrix.target.timeout }}"
)


def _build(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((WORKFLOWS / name).read_text())["jobs"]["build"])


def _step(job: dict[str, Any], needle: str) -> dict[str, Any]:
    return next(s for s in job["steps"] if needle in s.get("name", "") + s.get("uses", ""))


def test_the_deadline_counts_from_the_job_start_and_leaves_the_save_margin() -> None:
    assert job_deadline(1_000_000.0, 360) == 1_000_000.0 + (360 - SAVE_MARGIN_MINUTES) * 60


def test_job_flags_come_together(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO.path)
    demo = "wheelfarm-demo-0.1.0-cu130torch2.14-cp312-linux_x86_64"
    code = main(["build", demo, "--job-started", "1700000000"])
    assert code == UsageError.exit_code
    assert "--job-started and --job-minutes go together" in capsys.readouterr().err


def test_waits_end_at_the_heartbeat_or_the_deadline_whichever_is_first() -> None:
    assert proc._wait(60.0, None) == 60.0
    assert proc._wait(None, None) is None
    assert proc._wait(60.0, time.time() + 5) <= 5  # type: ignore[operator]
    assert proc._wait(None, time.time() - 5) == 0.0


@pytest.mark.parametrize("name", ["build-linux.yml", "build-windows.yml"])
def test_limits_come_from_the_runner_and_the_clock_from_the_job_start(name: str) -> None:
    job = _build(name)
    assert job["timeout-minutes"] == LIMIT  # a self-hosted runner brings its own limit
    assert job["env"]["JOB_MINUTES"] == JOB_MINUTES
    assert "JOB_STARTED" in job["steps"][0]["run"]  # the first step starts the clock
    build = _step(job, "Build, repair")
    assert "limit_minutes" in build["timeout-minutes"]  # a backstop only: the deadline is first
    inputs = yaml.safe_load((WORKFLOWS / name).read_text())[True]["workflow_call"]["inputs"]
    assert inputs["limit_minutes"] == {
        "description": inputs["limit_minutes"]["description"],
        "required": False,
        "type": "number",
        "default": 0,
    }
    assert inputs["runner"]["default"] == ""


@pytest.mark.parametrize("name", ["build-linux.yml", "build-windows.yml"])
def test_the_cache_is_restored_always_and_saved_only_when_the_build_did_not_finish(
    name: str,
) -> None:
    job = _build(name)
    restore = _step(job, "actions/cache/restore@")
    save = _step(job, "actions/cache/save@")
    assert "if" not in restore
    assert save["if"] == "${{ failure() && steps.build.outcome == 'failure' }}"
    assert restore["with"]["path"] == save["with"]["path"] == ".wheelfarm/cache/ccache"
    assert restore["with"]["restore-keys"].strip() == "ccache-${{ matrix.target.id }}-"
    assert _step(job, "Build, repair")["id"] == "build"


def test_linux_runs_the_entry_point_in_the_pinned_image_and_cleans_only_hosted_hosts() -> None:
    job = _build("build-linux.yml")
    assert "container" not in job  # the job clock starts before the image is pulled
    assert job["env"]["IMAGE"] == "${{ needs.targets.outputs.container }}"  # from the plan
    run = _step(job, "Build, repair")["run"]
    assert '"$IMAGE" scripts/farm-job.sh' in run
    assert "--env JOB_STARTED --env JOB_MINUTES" in run
    clean = _step(job, "Free disk")
    assert clean["if"] == "${{ runner.environment == 'github-hosted' }}"


def test_windows_runs_wheelfarm_in_its_own_python_and_builds_for_the_target() -> None:
    job = _build("build-windows.yml")
    target = _step(job, "The target Python")
    tool = _step(job, "A Python for wheelfarm")
    assert target["with"]["python-version"] == "${{ matrix.target.python }}"
    assert tool["with"]["python-version"] == "3.12"
    build = _step(job, "Build, repair")
    assert build["env"]["TARGET_PYTHON"] == "${{ steps.target.outputs.python-path }}"
    assert "--python-exe $env:TARGET_PYTHON" in build["run"]
    assert "--job-started $env:JOB_STARTED --job-minutes $env:JOB_MINUTES" in build["run"]
