"""Tests of what actions does (filed by module: tests/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.unit.helpers.roots import MakeRoot, _root_two_producers
from wheelfarm.core.errors import UsageError
from wheelfarm.github.actions import (
    JOB_KEYS,
    MAX_OUTPUT_BYTES,
    check_trusted,
    expected,
    github_outputs,
    plan_document,
    read_plan,
    shard_outputs,
)
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import Filters, make_plan


def test_github_outputs_name_shards_and_the_plan_file_holds_their_matrices() -> None:
    m = load_matrix(REPO)
    plan = make_plan(m, expand(m), filters=Filters(package=("causal-conv1d",)))
    out = github_outputs(plan)
    document = plan_document(
        plan, m.farm.hosted_job_limit_minutes, m.farm.publish_batch_wheels, m.farm.platforms
    )
    total = 0
    for name in json.loads(out["shards"]):
        shard = shard_outputs(document, name)
        include = json.loads(shard["include"])
        assert len(include) <= 256
        assert all(tuple(j) == JOB_KEYS for j in include)
        batches = json.loads(shard["batches"])
        assert {j["batch"] for j in include} == set(batches)
        builds = document["shards"][name]["builds"]  # a group job's build ids
        published = [i["id"] for b in batches for i in expected(document, name, b)["include"]]
        assert published == [i for j in include for i in builds[j["id"]]]
        for b in batches:  # a batch holds whole groups, at most publish_batch_wheels wheels
            mine = [j for j in include if j["batch"] == b]
            held = sum(len(builds[j["id"]]) for j in mine)
            assert held <= m.farm.publish_batch_wheels or len(mine) == 1
        total += len(published)
    assert total == int(out["count"]) == len(plan.todo)
    assert len(plan.groups) < len(plan.todo)  # its Pythons share a job
    assert max(len(v.encode("utf-16-le")) for v in out.values()) < 8 * 1024


def test_every_shard_of_the_whole_grid_fits_a_job_output() -> None:
    m = load_matrix(REPO)
    plan = make_plan(m, expand(m))
    document = plan_document(
        plan, m.farm.hosted_job_limit_minutes, m.farm.publish_batch_wheels, m.farm.platforms
    )
    sizes = [
        len(v.encode("utf-16-le"))
        for name in document["shards"]
        for v in shard_outputs(document, name).values()
    ]
    assert max(sizes) <= MAX_OUTPUT_BYTES
    assert sum(len(v.encode("utf-16-le")) for v in github_outputs(plan).values()) < 64 * 1024


@pytest.mark.parametrize(
    "text",
    [
        '{"version": 1, "shards": {"s": {"runner": 1}}}',
        (
            '{"version": 1, "shards": {"s": {"runner": "r", "container": "", "include": [1], '
            '"compile": [], "batches": "z"}}}'
        ),
        "[" * 5000 + "]" * 5000,
        '{"version": 2, "shards": {}}',
    ],
)
def test_a_malformed_plan_file_is_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "plan.json"
    path.write_text(text)
    with pytest.raises(UsageError, match=r"plan\.json|shard 's' in the plan is malformed"):
        shard_outputs(read_plan(path), "s")


def test_a_consumer_of_two_producers_downloads_both_and_names_only_earlier_jobs(
    matrix_dir: MakeRoot,
) -> None:
    """`after` is the artifact pattern's part for its producers: {a,b} (minimatch's braces);
    the shard's check takes it only where both jobs come before it."""
    m = load_matrix(_root_two_producers(matrix_dir))
    plan = make_plan(m, expand(m), filters=Filters(torch=("2.14",)))
    farm = m.farm
    document = plan_document(
        plan, farm.hosted_job_limit_minutes, farm.publish_batch_wheels, farm.platforms
    )
    (name,) = document["shards"]
    shard = document["shards"][name]
    check_trusted(document, name, m)
    jobs = {j["id"]: j for j in shard["include"]}
    consumer = "user-1.0.0-cu130torch2.14-linux_x86_64"
    producers = [consumer.replace("user-", p) for p in ("base-", "other-")]
    assert jobs[consumer]["after"] == "{" + ",".join(producers) + "}"
    assert [j["id"] for j in shard["include"]] == [*producers, consumer]
    for wrong in ("{" + producers[0] + "}", "{" + producers[0] + ",elsewhere}"):
        jobs[consumer]["after"] = wrong
        with pytest.raises(UsageError, match="has after"):
            check_trusted(document, name, m)
