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


def test_limits_come_from_the_plan_and_the_clock_from_the_job_start() -> None:
    job = _build("build.yml")
    assert job["timeout-minutes"] == "${{ matrix.target.timeout }}"  # shard sets self-hosted's
    assert job["env"]["JOB_MINUTES"] == "${{ matrix.target.minutes }}"
    assert "JOB_STARTED" in job["steps"][0]["run"]  # the first step starts the clock
    assert "JOB_STARTED" in job["steps"][1]["run"]  # ... on Windows too
    for name in ("Build, repair, verify (scripts", "Build, repair (delvewheel)"):
        assert _step(job, name)["timeout-minutes"] == "${{ matrix.target.step }}"


def test_a_self_hosted_label_brings_its_own_limit(tmp_path: Path) -> None:
    """`shard --runner PLATFORM=LABEL --limit-minutes N`: that platform's jobs on the label, the
    job N minutes, its step at most GitHub's 360 and the build's clock at most 375."""
    from wheelfarm.github.actions import self_hosted

    job = {
        "platform": "win_amd64",
        "runner": "windows-2022",
        "timeout": 90,
        "step": 75,
        "minutes": 90,
    }
    assert self_hosted(job, {"linux_x86_64": "big"}, 1440) == job
    assert self_hosted(job, {"win_amd64": "gpu-box"}, 1440) == {
        "platform": "win_amd64", "runner": "gpu-box", "timeout": 1440, "step": 360, "minutes": 375,
    }  # fmt: skip


def test_the_cache_is_restored_always_and_saved_only_when_the_build_did_not_finish() -> None:
    job = _build("build.yml")
    restore = _step(job, "actions/cache/restore@")
    save = _step(job, "actions/cache/save@")
    assert "if" not in restore
    assert save["if"] == (
        "${{ failure() && (steps.build.outcome == 'failure' || "
        "steps.build-windows.outcome == 'failure') }}"
    )
    assert restore["with"]["path"] == save["with"]["path"] == ".wheelfarm/cache/ccache"
    assert restore["with"]["restore-keys"].strip() == "ccache-${{ matrix.target.id }}-"
    assert _step(job, "Build, repair, verify (scripts")["id"] == "build"
    assert _step(job, "Build, repair (delvewheel)")["id"] == "build-windows"


def test_linux_runs_the_entry_point_in_the_pinned_image_and_cleans_only_hosted_hosts() -> None:
    job = _build("build.yml")
    assert "container" not in job  # the job clock starts before the image is pulled
    assert job["env"]["IMAGE"] == "${{ matrix.target.container }}"  # from the plan
    run = _step(job, "Build, repair, verify (scripts")["run"]
    assert '"$IMAGE" scripts/farm-job.sh' in run
    assert "--env JOB_STARTED --env JOB_MINUTES" in run
    clean = _step(job, "Free disk")
    assert clean["if"] == (
        "${{ runner.environment == 'github-hosted' && matrix.target.platform != 'win_amd64' }}"
    )


def test_windows_runs_wheelfarm_in_its_own_python_and_builds_the_group() -> None:
    job = _build("build.yml")
    target = _step(job, "The group's Pythons (Windows)")
    tool = _step(job, "A Python for wheelfarm itself (Windows")
    assert target["with"]["python-version"] == "${{ matrix.target.python }}"  # every one
    assert tool["with"]["python-version"] == "3.12"
    build = _step(job, "Build, repair (delvewheel)")
    assert "--pythons $env:PYTHONS" in build["run"]  # found in the tool cache (find_python)
    assert "--job-started $env:JOB_STARTED --job-minutes $env:JOB_MINUTES" in build["run"]
