"""Workflow hygiene and the contract between `wheelfarm plan --format github` and the workflows."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from ghsim.actions.cron import CronError, next_fire
from ghsim.actions.standins import PINS
from tests.roots import REPO
from tests.workflows import run_block
from wheelfarm.cli import main
from wheelfarm.core.errors import UsageError
from wheelfarm.github.actions import (
    JOB_KEYS,
    check_trusted,
    github_outputs,
    plan_document,
    shard_outputs,
)
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import Filters, make_plan

WORKFLOWS = Path(__file__).parents[2] / ".github" / "workflows"
FILES = sorted(WORKFLOWS.glob("*.yml"))


def test_the_build_workflow_reads_exactly_the_plan_job_keys() -> None:
    used = set(re.findall(r"matrix\.target\.([a-z_]+)", (WORKFLOWS / "build.yml").read_text()))
    assert used == set(JOB_KEYS), (
        f"read, not emitted: {used - set(JOB_KEYS)}; emitted, unread: {set(JOB_KEYS) - used}"
    )


def test_the_farm_runs_as_many_lanes_as_farm_yaml_says() -> None:
    """farm.yml's compile lanes and shards both run at most the plan's `lanes` output, which
    is farm.yaml's pool.lanes (no number in the workflow: a Pro or self-hosted farm sets 40),
    the shards after the compile lanes (`needs:`, so the two never hold lanes together)."""
    jobs = _workflow("farm.yml")["jobs"]  # type: ignore[index]
    for name in ("compile", "build"):
        want = "${{ fromJSON(needs.plan.outputs.lanes) }}"
        assert jobs[name]["strategy"]["max-parallel"] == want
    assert jobs["build"]["needs"] == ["plan", "compile"]
    matrix = load_matrix(REPO)
    assert github_outputs(make_plan(matrix, expand(matrix)))["lanes"] == str(matrix.farm.pool.lanes)
    shard = _workflow("build.yml")["jobs"]  # type: ignore[index]
    assert shard["compile"]["strategy"]["max-parallel"] == 1  # a lane: one job at a time
    assert shard["build"]["strategy"]["max-parallel"] == 1
    assert shard["publish"]["strategy"]["max-parallel"] == 1


def test_farm_reads_every_plan_output() -> None:
    matrix = load_matrix(REPO)
    outputs = github_outputs(make_plan(matrix, expand(matrix)))
    farm = yaml.safe_load((WORKFLOWS / "farm.yml").read_text())
    declared = farm["jobs"]["plan"]["outputs"]
    assert set(declared) == set(outputs)
    for key, value in declared.items():
        assert value == f"${{{{ steps.plan.outputs.{key} }}}}"


def test_the_shard_workflow_reads_every_shard_output() -> None:
    name = "build.yml"
    matrix = load_matrix(REPO)
    plan = make_plan(matrix, expand(matrix))
    document = plan_document(
        plan,
        matrix.farm.hosted_job_limit_minutes,
        matrix.farm.publish_batch_wheels,
        matrix.farm.platforms,
    )
    keys = set(shard_outputs(document, next(iter(document["shards"]))))
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    declared = data["jobs"]["targets"]["outputs"]
    # every output but the GPU runner's label (`wheelfarm gpu-check`) is the shard's
    from_shard = {k for k, v in declared.items() if "steps.shard.outputs." in v}
    assert set(declared) - from_shard == {"gpu_runner"}
    assert from_shard <= keys
    read = set(re.findall(r"needs\.targets\.outputs\.([a-z_]+)", (WORKFLOWS / name).read_text()))
    assert read == set(declared)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_hygiene(path: Path) -> None:
    text = path.read_text()
    data = yaml.safe_load(text)
    assert data["permissions"] == {}, "top-level permissions must be {}"
    for line in re.findall(r"uses:\s*(\S+.*)", text):
        if line.startswith("./"):
            continue
        assert re.match(r"[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d", line), f"unpinned action: {line}"
    for job_id, job in data["jobs"].items():
        if "uses" not in job:
            assert "timeout-minutes" in job, f"{path.name}:{job_id} has no timeout"
        assert "permissions" in job, f"{path.name}:{job_id} has no least-privilege permissions"
        for step in job.get("steps", []):
            run = step.get("run", "")
            assert "${{" not in run, f"{path.name}:{job_id}: expression inside run: pass it via env"
            if "actions/checkout@" in step.get("uses", ""):
                assert step.get("with", {}).get("persist-credentials") is False
    if "workflow_call" not in (data.get(True) or data.get("on") or {}):
        assert "concurrency" in data or all("concurrency" in j for j in data["jobs"].values())


def test_nothing_names_an_owner() -> None:
    for path in FILES:
        assert not re.search(r"github\.io/|github\.com/[A-Za-z0-9-]+/", path.read_text()), path.name


def _workflow(name: str) -> dict[str, object]:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def test_each_shard_publishes_when_its_builds_end_even_if_cancelled() -> None:
    for name in ("build.yml",):
        publish = _workflow(name)["jobs"]["publish"]  # type: ignore[index]
        # after the GPU check where farm.yaml names a runner; always(): also when it is skipped
        # (a compile lane that holds only compile shards has no batch to publish)
        assert publish["needs"] == ["targets", "build", "gpu-check"]
        assert publish["if"] == (
            "${{ always() && needs.targets.result == 'success' "
            "&& needs.targets.outputs.batches != '[]' }}"
        )
        assert publish["uses"] == "./.github/workflows/publish.yml"
        build = _workflow(name)["jobs"]["build"]  # type: ignore[index]
        assert build["permissions"] == {"actions": "read", "contents": "read"}  # never write
        gpu = _workflow(name)["jobs"]["gpu-check"]  # type: ignore[index]
        assert gpu["permissions"] == {"actions": "read", "contents": "read"}  # package code runs
        assert "needs.targets.outputs.gpu_runner != ''" in gpu["if"]


def test_farm_runs_one_at_a_time_per_repository_and_plans_from_releases() -> None:
    farm = _workflow("farm.yml")
    assert farm["concurrency"] == {
        "group": "farm-${{ github.repository }}",
        "cancel-in-progress": False,
    }
    plan = run_block("farm.yml", "plan", "plan")
    assert "--existing-releases" in plan and "pages-url" not in plan


def test_pages_deploys_from_the_default_branch_after_every_farm_run() -> None:
    pages = _workflow("pages.yml")
    trigger = pages["on"]["workflow_run"]  # type: ignore[index]
    assert trigger == {"workflows": ["farm"], "types": ["completed"]}  # any conclusion
    # and hourly, coalesced by its concurrency group: a run publishes for days
    assert pages["on"]["schedule"] == [{"cron": "17 * * * *"}]  # type: ignore[index]
    assert pages["concurrency"]["cancel-in-progress"] is False  # type: ignore[index]
    assert pages["jobs"]["deploy"]["environment"]["name"] == "github-pages"  # type: ignore[index]
    assert "--github" in run_block("pages.yml", "index", "Build the index from Releases")


ROOT = Path(__file__).parents[2]


USES = re.compile(r"uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40})\s*#\s*(v[\d.]+)")


SHIPPED = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_pinned_action_runs_on_node_24(path: Path) -> None:
    found = USES.findall(path.read_text(encoding="utf-8"))
    assert found
    for action, sha, version in found:
        pin = PINS.get(sha)
        assert pin is not None, f"{path.name}: {action}@{sha} is not in the model's table"
        assert action.startswith(pin.action), f"{path.name}: {sha} is {pin.action}, not {action}"
        assert version == pin.version, (
            f"{path.name}: {action} says {version}, the SHA is {pin.version}"
        )
        assert pin.using == "node24", f"{path.name}: {action} {version} runs on {pin.using}"


def test_the_fixtures_pins_are_known_too() -> None:
    for path in (ROOT / "tests" / "actions" / "fixtures" / "before").glob("*.yml"):
        for action, sha, _ in USES.findall(path.read_text(encoding="utf-8")):
            assert sha in PINS, f"fixture {path.name}: {action}@{sha}"


def test_pages_daily_line_fires_at_04_17_each_day() -> None:
    assert next_fire("17 4 * * *", 0) == 257
    assert next_fire("17 4 * * *", 257) == 1440 + 257


def test_steps_lists_and_weekdays() -> None:
    assert next_fire("*/15 * * * *", 0) == 15
    assert next_fire("0 0,12 * * *", 1) == 720
    # the epoch, 2026-12-01, is a Tuesday: Sunday 00:00 is 5 days on
    assert next_fire("0 0 * * 0", 0) == 5 * 1440


@pytest.mark.parametrize("line", ["", "61 * * * *", "* * * *", "x * * * *", "*/0 * * * *"])
def test_a_bad_line_is_one_error_naming_it(line: str) -> None:
    with pytest.raises(CronError, match="cron"):
        next_fire(line, 0)


@given(st.text(max_size=30), st.floats(0, 1e6))
def test_any_line_fires_later_or_is_refused(line: str, after: float) -> None:
    with contextlib.suppress(CronError):
        assert next_fire(line, after) > after


def _build(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((WORKFLOWS / name).read_text())["jobs"]["build"])


def _step(job: dict[str, Any], needle: str) -> dict[str, Any]:
    return next(s for s in job["steps"] if needle in s.get("name", "") + s.get("uses", ""))


def test_job_flags_come_together(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO.path)
    demo = "wheelfarm-demo-0.1.0-cu130torch2.14-cp312-linux_x86_64"
    code = main(["build", demo, "--job-started", "1700000000"])
    assert code == UsageError.exit_code
    assert "--job-started and --job-minutes go together" in capsys.readouterr().err


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


def test_every_run_takes_each_platforms_runner_label_from_farm_yaml() -> None:
    """A tag or scheduled run has no inputs: its jobs run on farm.yaml's runner labels (a
    self-hosted pool's too), which the plan writes into every job and the shard job holds it
    to; a dispatch's runner_<platform> input overrides one run's. (A Windows label needs its
    Pythons and MSVC toolsets in compat.yaml first: Linux's run in the pinned image.)"""
    matrix = load_matrix(REPO)
    labelled = {
        name: dataclasses.replace(info, runner=f"self-hosted-{name}")
        if name.startswith("linux")
        else info
        for name, info in matrix.farm.platforms.items()
    }
    farm = dataclasses.replace(matrix.farm, platforms=labelled)
    matrix = dataclasses.replace(matrix, farm=farm)
    plan = make_plan(matrix, expand(matrix), filters=Filters(torch=("2.15",)))
    document = plan_document(
        plan, farm.hosted_job_limit_minutes, farm.publish_batch_wheels, labelled
    )
    seen = set()
    for name, shard in document["shards"].items():
        check_trusted(document, name, matrix)
        for job in (*shard["compile"], *shard["include"]):
            assert job["runner"] == labelled[job["platform"]].runner
            seen.add(job["platform"])
        outputs = json.loads(shard_outputs(document, name)["include"])
        assert all(j["runner"] == labelled[j["platform"]].runner for j in outputs)
    assert {"linux_x86_64", "linux_aarch64"} <= seen
    build = _workflow("build.yml")["jobs"]  # type: ignore[index]
    assert build["build"]["runs-on"] == build["compile"]["runs-on"] == "${{ matrix.target.runner }}"


def test_a_version_tag_releases_wheelfarm_to_pypi_by_trusted_publishing() -> None:
    """release.yml: a `v*` tag builds and checks (scripts/release.sh, run for real by
    tests/integration/test_release.py); only the publish job, in the `pypi` environment, holds
    id-token: write, and no PyPI token is read."""
    release = _workflow("release.yml")
    assert release["on"] == {"push": {"tags": ["v*"]}}
    jobs: dict[str, Any] = release["jobs"]  # type: ignore[assignment]
    assert jobs["build"]["permissions"] == {"contents": "read"}
    build = run_block("release.yml", "build", "Build and check the sdist and wheel")
    assert 'bash scripts/release.sh "$TAG" dist' in build
    assert jobs["build"]["steps"][2]["env"] == {"TAG": "${{ github.ref_name }}"}
    publish = jobs["publish"]
    assert publish["needs"] == "build" and publish["environment"]["name"] == "pypi"
    assert publish["permissions"] == {"id-token": "write"}
    assert "uv publish --trusted-publishing always dist/*" in run_block(
        "release.yml", "publish", "Publish to PyPI"
    )
    assert "secrets." not in (WORKFLOWS / "release.yml").read_text()
