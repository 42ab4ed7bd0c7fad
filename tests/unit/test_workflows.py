"""Workflow hygiene and the contract between `wheelfarm plan --format github` and the workflows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.roots import REPO
from tests.workflows import run_block
from wheelfarm.github.actions import JOB_KEYS, github_outputs, plan_document, shard_outputs
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import make_plan

WORKFLOWS = Path(__file__).parents[2] / ".github" / "workflows"
FILES = sorted(WORKFLOWS.glob("*.yml"))


def test_the_build_workflow_reads_exactly_the_plan_job_keys() -> None:
    used = set(re.findall(r"matrix\.target\.([a-z_]+)", (WORKFLOWS / "build.yml").read_text()))
    assert used == set(JOB_KEYS), (
        f"read, not emitted: {used - set(JOB_KEYS)}; emitted, unread: {set(JOB_KEYS) - used}"
    )


def test_the_farm_runs_as_many_lanes_as_the_plan_assumes() -> None:
    """farm.yml's max-parallel over the shards is farm.yaml's pool.lanes, and leaves room: at
    most 19 of GitHub Free's 20 jobs, so pages, ci and watch (one job each) start while it
    builds."""
    build = _workflow("farm.yml")["jobs"]["build"]  # type: ignore[index]
    lanes = load_matrix(REPO).farm.pool.lanes
    assert build["strategy"]["max-parallel"] == lanes <= 19
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
    assert set(declared) <= keys
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
        assert publish["needs"] == ["targets", "build"]
        assert publish["if"] == "${{ always() && needs.targets.result == 'success' }}"
        assert publish["uses"] == "./.github/workflows/publish.yml"
        build = _workflow(name)["jobs"]["build"]  # type: ignore[index]
        assert build["permissions"] == {"actions": "read", "contents": "read"}  # never write


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
