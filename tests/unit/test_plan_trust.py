"""A plan file is an artifact any earlier job could rewrite (issue 36 row 7): `wheelfarm shard`
holds each shard to what farm.yaml and torch.yaml permit before its values reach job outputs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.roots import REPO
from wheelfarm.cli import main
from wheelfarm.core.errors import UsageError
from wheelfarm.github.actions import check_trusted, plan_document
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix
from wheelfarm.matrix.plan import Filters, make_plan


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix(REPO)


@pytest.fixture(scope="module")
def document(matrix: Matrix) -> dict[str, Any]:
    plan = make_plan(matrix, expand(matrix), filters=Filters(package=("causal-conv1d",)))
    farm = matrix.farm
    return plan_document(
        plan, farm.hosted_job_limit_minutes, farm.publish_batch_wheels, farm.platforms
    )


def test_every_shard_the_planner_writes_is_trusted(matrix: Matrix) -> None:
    """The whole grid: torch-free packages and split groups included."""
    plan = make_plan(matrix, expand(matrix))
    whole = plan_document(plan, matrix.farm.hosted_job_limit_minutes, 10**6, matrix.farm.platforms)
    for name in whole["shards"]:
        check_trusted(whole, name, matrix)


def _set(path: str, value: object) -> Any:
    def change(shard: dict[str, Any]) -> None:
        target: Any = shard
        *keys, last = path.split(".")
        for key in keys:
            target = target[int(key)] if key.isdigit() else target[key]
        target[last] = value

    return change


TAMPERED = [
    ("runner", _set("include.0.runner", "self-hosted"), "runner 'self-hosted'"),
    (
        "container",
        _set("include.0.container", "quay.io/pypa/manylinux_2_28_x86_64:latest"),
        "container",
    ),
    ("platform", _set("include.0.platform", "linux_riscv64"), "platform 'linux_riscv64'"),
    ("minutes", _set("include.0.minutes", 100000), "minutes 100000"),
    ("after", _set("include.0.after", "flash-attn-2.8.3-cu130torch2.14-linux_x86_64"), "after"),
    ("cuda", _set("include.0.cuda", "cu999"), "cuda 'cu999'"),
    ("cuda type", _set("include.0.cuda", ["cu130"]), "cuda ['cu130']"),
    ("python", _set("include.0.python", "3.12\n3.99"), "python '3.12\\n3.99'"),
    ("timeout", _set("include.0.timeout", 100000), "timeout 100000"),
    ("timeout type", _set("include.0.timeout", "30"), "timeout '30'"),
    ("step", _set("include.0.step", 5000), "step 5000"),
    ("links", _set("include.0.links", -1), "links -1"),
    ("part", _set("include.0.part", "1/3; rm -rf /"), "part '1/3; rm -rf /'"),
]


@pytest.mark.parametrize(("what", "change", "named"), TAMPERED, ids=[t[0] for t in TAMPERED])
def test_a_tampered_value_is_refused_naming_it(
    matrix: Matrix, document: dict[str, Any], what: str, change: Any, named: str
) -> None:
    del what
    tampered = copy.deepcopy(document)
    name = next(iter(tampered["shards"]))
    change(tampered["shards"][name])
    with pytest.raises(UsageError) as caught:
        check_trusted(tampered, name, matrix)
    text = str(caught.value)
    assert named in text and "\n" not in text.replace("\\n", "")
    assert "wheelfarm plan" in text  # the fix


def test_shard_refuses_a_self_hosted_runner_before_writing_outputs(
    document: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tampered = copy.deepcopy(document)
    name = next(iter(tampered["shards"]))
    tampered["shards"][name]["include"][0]["runner"] = "self-hosted"
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(tampered))
    outputs = tmp_path / "outputs"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    code = main(["shard", name, "--plan-file", str(plan), "--root", str(REPO.path)])
    assert code == UsageError.exit_code
    assert not outputs.exists()
    assert "runner 'self-hosted'" in capsys.readouterr().err
