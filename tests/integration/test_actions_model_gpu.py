"""The GPU check in the Actions model: with farm.yaml's gpu_check.runner set, build.yml's
gpu-check job runs after a shard's builds on that runner, its minutes on the clock, and the
records publish uploads carry each wheel's kernel result; unset, the job is skipped and nothing
changes (the model's other tests run that way)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ghsim.actions.farm import Farm
from ghsim.actions.scenario import SCALE
from ghsim.fakegithub import FakeGitHub, fake_github

pytestmark = pytest.mark.integration

SELECTION = {
    "package": "causal-conv1d",
    "platform": "linux_x86_64",
    "cuda": "cu130",
    "torch": "2.14",
    "python": "",
}


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(scale=SCALE)
    with fake_github(fake):
        yield fake


def _records(fake: FakeGitHub) -> dict[str, dict[str, object]]:
    """Every published record, by wheel name (the releases' records-*.json)."""
    out: dict[str, dict[str, object]] = {}
    for release in fake.releases:
        for asset in release["assets"]:
            if asset["name"].startswith("records-"):
                out |= json.loads(fake.blobs[asset["id"]])
    return out


def _gpu_jobs(farm: Farm) -> list[tuple[str, str, float, float]]:
    """(job, result, start, end) of every GPU-check job that ran (the model's job log)."""
    return [j for j in farm.model.job_log if "/ gpu-check" in j[0]]


def test_a_gpu_runner_checks_every_wheel_before_it_is_published(
    tmp_path: Path, github: FakeGitHub
) -> None:
    farm = Farm(github, tmp_path, gpu_runner="gpu-h100")
    run = farm.model.dispatch("farm.yml", SELECTION)
    farm.model.run_until_idle()
    assert run.conclusion == "success"
    assert farm.model.limits_hit == []
    records = _records(github)
    assert len(records) == len(farm.built) > 0
    for record in records.values():
        kernels = record["kernels"]
        assert isinstance(kernels, dict)
        assert kernels["passed"] is True
        assert (kernels["sm"], kernels["runner"]) == ("sm_90", "gpu-h100")
    gpu = _gpu_jobs(farm)
    assert gpu, [j[0] for j in farm.model.job_log]
    assert {result for _, result, _, _ in gpu} == {"success"}
    minutes = sum(end - start for _, _, start, end in gpu)
    assert minutes >= 3.0 * len(farm.built)  # minutes_per_wheel, for each wheel it checked


def test_without_a_gpu_runner_the_job_is_skipped(tmp_path: Path, github: FakeGitHub) -> None:
    farm = Farm(github, tmp_path)
    run = farm.model.dispatch("farm.yml", SELECTION)
    farm.model.run_until_idle()
    assert run.conclusion == "success"
    assert {result for _, result, _, _ in _gpu_jobs(farm)} <= {"skipped"}
    assert all("kernels" not in r for r in _records(github).values())
