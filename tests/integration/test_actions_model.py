"""The Actions model (tests/actions/) runs the workflow files as GitHub does and stops where
GitHub would: tiny workflows for each documented limit, the workflows as they stood before the
first real run (tests/actions/fixtures/before) for the three failures that would have stopped it,
and the shipped workflows for the fixes. The model needs node (GitHub's parser and evaluator,
bundled by scripts/test.sh) and runs every `run:` block with bash."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from textwrap import dedent

import pytest

from ghsim.actions.farm import Farm
from ghsim.actions.model import Artifact, Model, RunStartError
from ghsim.actions.scenario import SCALE, every_feature, first_run
from ghsim.actions.standins import standins
from ghsim.actions.workflow import WorkflowError
from ghsim.fakegithub import FakeGitHub, fake_github
from ghsim.synthetic import farm_wheel
from wheelfarm.core.digest import sha256_file
from wheelfarm.github.actions import MAX_OUTPUT_BYTES
from wheelfarm.matrix.plan import Filters, make_plan

pytestmark = pytest.mark.integration


def tiny(tmp_path: Path, **files: str) -> Model:
    """A repository holding only these workflow files."""
    folder = tmp_path / "repo" / ".github" / "workflows"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / f"{name}.yml").write_text(dedent(text), encoding="utf-8")
    return Model(tmp_path / "repo", tmp_path / "work", standins(), env={"PATH": os.environ["PATH"]})


def limits(model: Model) -> list[str]:
    return [h.line() for h in model.limits_hit]


def test_a_needs_naming_no_job_is_refused_by_githubs_parser(tmp_path: Path) -> None:
    model = tiny(tmp_path, ci="""
        on: push
        jobs:
          a: {runs-on: ubuntu-24.04, steps: [{run: "true"}]}
          b: {runs-on: ubuntu-24.04, needs: [a, nope], steps: [{run: "true"}]}
    """)  # fmt: skip
    with pytest.raises((WorkflowError, RunStartError), match="nope"):
        model.push_branch("main", ["x"])


def test_a_matrix_past_256_jobs_fails_the_job_naming_the_limit(tmp_path: Path) -> None:
    model = tiny(tmp_path, ci="""
        on: push
        jobs:
          plan:
            runs-on: ubuntu-24.04
            outputs: {ids: "${{ steps.p.outputs.ids }}"}
            steps:
              - id: p
                run: echo "ids=[$(seq -s, 1 300)]" >> "$GITHUB_OUTPUT"
          build:
            needs: plan
            runs-on: ubuntu-24.04
            strategy: {matrix: {id: "${{ fromJSON(needs.plan.outputs.ids) }}"}}
            steps: [{run: "true"}]
    """)  # fmt: skip
    (run,) = model.push_branch("main", ["x"])
    model.run_until_idle()
    assert limits(model) == ["matrix: build: 300 jobs > 256"]
    assert run.conclusion == "failure"


def _most_at_once(model: Model, prefix: str) -> int:
    spans = [(start, end) for job, _, start, end in model.job_log if job.startswith(prefix)]
    return max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)


def test_twenty_jobs_run_at_once_and_max_parallel_holds_a_matrix_back(tmp_path: Path) -> None:
    model = tiny(tmp_path, ci="""
        on: push
        jobs:
          wide:
            runs-on: ubuntu-24.04
            strategy: {matrix: {i: "${{ fromJSON('[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25]') }}"}}
            steps: [{run: "true"}]
          narrow:
            runs-on: ubuntu-24.04
            strategy: {max-parallel: 3, matrix: {i: [1, 2, 3, 4, 5, 6, 7]}}
            steps: [{run: "true"}]
    """)  # fmt: skip
    model.push_branch("main", ["x"])
    model.run_until_idle()
    assert _most_at_once(model, "") == 20  # the Free plan's concurrent jobs, all of them busy
    assert _most_at_once(model, "narrow") == 3
    assert len(model.job_log) == 32


def test_job_outputs_past_1_mb_as_utf16_fail_the_job(tmp_path: Path) -> None:
    model = tiny(tmp_path, ci="""
        on: push
        jobs:
          plan:
            runs-on: ubuntu-24.04
            outputs: {big: "${{ steps.p.outputs.big }}"}
            steps:
              - id: p
                run: printf 'big=%0600000d\\n' 0 >> "$GITHUB_OUTPUT"
    """)  # fmt: skip
    (run,) = model.push_branch("main", ["x"])
    model.run_until_idle()
    assert limits(model) == ["job outputs: plan: 1,200,006 bytes (UTF-16) > 1,048,576"]
    assert run.conclusion == "failure"


def test_a_name_download_is_one_filtered_request_and_a_pattern_lists_the_run(
    tmp_path: Path,
) -> None:
    """download-artifact's `name` asks `?name=` (getArtifactPublic): no listing, no cap, the
    newest of that name; a `pattern` lists the run and stops at 1,000 unless raised."""
    model = tiny(tmp_path, ci="""
        on: push
        permissions: {actions: read}
        jobs:
          get:
            runs-on: ubuntu-24.04
            steps:
              - uses: actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c
                with: {name: plan, path: got, github-token: "${{ github.token }}", run-id: "${{ github.run_id }}"}
              - run: test "$(cat got/which)" = newest
              - uses: actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c
                with: {pattern: "w-*", path: all, github-token: "${{ github.token }}", run-id: "${{ github.run_id }}"}
    """)  # fmt: skip
    (run,) = model.push_branch("main", ["x"])
    for n, name in enumerate([*(f"w-{i}" for i in range(1_200)), "plan", "plan"]):
        files = tmp_path / "stored" / str(n)
        files.mkdir(parents=True)
        (files / "which").write_text("newest" if n == 1_201 else "older", encoding="utf-8")
        model.artifacts.append(Artifact(name, run.id, 1, files, 6, model.now, model.now + 1440))
    model.run_until_idle()
    assert run.conclusion == "success"  # the name found the newest `plan` past the first 1,000
    assert limits(model) == ["artifact listing: get: lists 1000 of the run's 1202 artifacts"]
    # ?name= and its download; 10 pages of 100, and the 1,000 w-* listed, each downloaded
    assert model.artifact_requests == 1 + 1 + 10 + 1_000


def test_a_pattern_is_minimatchs_so_braces_name_several_artifacts(tmp_path: Path) -> None:
    """download-artifact filters names with `new Minimatch(pattern)`: {a,b} is a or b (a
    consumer's `after` for several producers); a brace without a comma is literal."""
    model = tiny(tmp_path, ci="""
        on: push
        jobs:
          get:
            runs-on: ubuntu-24.04
            steps:
              - uses: actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c
                with: {pattern: "w-{a,b}-x", path: two, merge-multiple: "true"}
              - run: test "$(ls two | sort | tr '\\n' ' ')" = "w-a-x w-b-x "
              - uses: actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c
                with: {pattern: "w-{a}-x", path: literal}
              - run: test "$(ls literal)" = "w-{a}-x"
    """)  # fmt: skip
    (run,) = model.push_branch("main", ["x"])
    for n, name in enumerate(["w-a-x", "w-b-x", "w-c-x", "w-{a}-x"]):
        files = tmp_path / "stored" / str(n)
        files.mkdir(parents=True)
        (files / name).write_text(name, encoding="utf-8")
        model.artifacts.append(Artifact(name, run.id, 1, files, 6, model.now, model.now + 1440))
    model.run_until_idle()
    assert run.conclusion == "success"


def test_a_concurrency_group_holds_one_running_and_one_pending_run(tmp_path: Path) -> None:
    model = tiny(tmp_path, farm="""
        on: {push: {tags: ["v*"]}}
        concurrency: {group: "farm-${{ github.repository }}", cancel-in-progress: false}
        jobs:
          work: {runs-on: ubuntu-24.04, steps: [{run: "true"}]}
    """)  # fmt: skip
    runs = [model.push_tag(t)[0] for t in ("v1", "v2", "v3")]
    model.run_until_idle()
    # v2 waited, then v3 took its place; v1 and v3 ran one after the other
    assert [r.conclusion for r in runs] == ["success", "cancelled", "success"]
    assert runs[2].started >= runs[0].ended


def test_step_and_job_limits_are_githubs(tmp_path: Path) -> None:
    model = tiny(tmp_path, ci="""
        on: push
        jobs:
          long:
            runs-on: ubuntu-24.04
            timeout-minutes: 2880
            steps: [{run: "true", timeout-minutes: 2880}]
          own:
            runs-on: self-hosted
            timeout-minutes: 2880
            steps: [{run: "true"}]
    """)  # fmt: skip
    model.push_branch("main", ["x"])
    model.run_until_idle()
    assert sorted(limits(model)) == [
        "job time limit: long: timeout-minutes 2880 > 360 (hosted)",
        "job time limit: own: timeout-minutes 2880 > 1440 (self-hosted token)",
        "step time limit: long: step __run: timeout-minutes 2880 > 360",
    ]


def test_a_called_workflow_gets_no_more_permission_than_its_caller(tmp_path: Path) -> None:
    model = tiny(
        tmp_path,
        caller="""
            on: push
            permissions: {}
            jobs:
              call: {permissions: {contents: read}, uses: ./.github/workflows/callee.yml}
        """,
        callee="""
            on: {workflow_call: {}}
            jobs:
              write: {runs-on: ubuntu-24.04, permissions: {contents: write}, steps: [{run: "true"}]}
        """,
    )
    (run,) = model.push_branch("main", ["x"])
    model.run_until_idle()
    assert limits(model) == [
        "permissions: call / write: asks for contents: write beyond its caller's"
    ]
    assert run.conclusion == "failure"


def test_paths_filter_starts_the_farm_on_yaml_and_patches_only(tmp_path: Path) -> None:
    fake = FakeGitHub(scale=SCALE)
    with fake_github(fake):
        model = Farm(fake, tmp_path).model
        names = lambda files: sorted(r.workflow.name for r in model.push_branch("main", files))  # noqa: E731
        assert "farm" not in names(["matrix/plan.py"])
        assert "farm" in names(["matrix/packages/flash-attn.yaml"])
        assert "farm" in names(["matrix/patches/x.patch"])


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(scale=SCALE)
    with fake_github(fake):
        yield fake


def _published(fake: FakeGitHub) -> int:
    return sum(
        1
        for r in fake.releases
        for a in r["assets"]
        if a["name"].endswith(".whl") and a["state"] == "uploaded"
    )


# -- the three failures, on the workflows as they stood (fixtures) and as they are now -----------


def test_before_the_plan_jobs_outputs_passed_1_mb_and_nothing_built(
    tmp_path: Path, github: FakeGitHub
) -> None:
    farm = Farm(github, tmp_path, workflows="before")
    farm.model.push_tag("v1")
    farm.model.run_until_idle(30)
    hits = [h for h in farm.model.limits_hit if h.limit == "job outputs"]
    assert [h.job for h in hits] == ["plan"]
    assert int(hits[0].value.split(" bytes")[0].replace(",", "")) > 2_000_000
    assert farm.built == set()


def test_now_the_plan_jobs_outputs_name_shards_only(tmp_path: Path, github: FakeGitHub) -> None:
    farm = Farm(github, tmp_path)
    farm.model.push_tag("v1")
    farm.model.run_until_idle(30)  # the plan and the first shards' targets jobs
    plan = next(n for r in farm.model.runs for n in r.nodes if n.job_id == "plan")
    assert plan.result == "success"
    assert farm.model.limits_hit == []
    assert 0 < farm.model.max_output_bytes <= MAX_OUTPUT_BYTES


ONE_PLATFORM = {
    "package": "causal-conv1d",
    "platform": "linux_x86_64",
    "cuda": "",
    "torch": "",
    "python": "",
}


def test_before_publish_listed_100_of_its_artifacts_and_passed(
    tmp_path: Path, github: FakeGitHub
) -> None:
    farm = Farm(github, tmp_path, workflows="before")
    run = farm.model.dispatch("farm.yml", ONE_PLATFORM)
    farm.model.run_until_idle()
    assert len(farm.built) > 150  # one shard, more than a page of artifacts
    assert any(h.limit == "artifact listing" for h in farm.model.limits_hit)
    assert run.conclusion == "success"  # green ...
    assert _published(github) == 100  # ... with a third of the wheels left out


def test_now_publish_takes_every_wheel_or_fails(tmp_path: Path, github: FakeGitHub) -> None:
    farm = Farm(github, tmp_path)
    farm.faults.failing = {"causal-conv1d-1.7.0-cu130torch2.14-cp312-linux_x86_64"}
    run = farm.model.dispatch("farm.yml", {**ONE_PLATFORM, "torch": "2.13,2.14"})
    farm.model.run_until_idle()
    built = len(farm.built)
    assert run.conclusion == "failure"  # one wheel missing: its publish batch says so
    assert _published(github) == built
    farm.model.rerun_failed(run)
    farm.model.run_until_idle()
    assert run.conclusion == "success"
    assert _published(github) == len(farm.built) == built + 1
    assert farm.model.limits_hit == []


def test_a_build_writing_another_builds_wheel_fails_its_publish_batch(
    tmp_path: Path, github: FakeGitHub
) -> None:
    """Issue 49 row 1 in the model: torch-cluster's job also writes torch-scatter's wheel with
    other bytes and a record that holds. Each artifact downloaded on its own, publish refuses the
    batch and no forged bytes reach a release."""
    selection = {**ONE_PLATFORM, "package": "torch-cluster,torch-scatter", "cuda": "cu130",
                 "torch": "2.14", "python": "3.12"}  # fmt: skip
    farm = Farm(github, tmp_path)
    forger, victim = (next(b for b in farm.expansion.builds if b.package == p and b.cuda == "cu130"
                           and b.torch_minor == "2.14" and b.python == "3.12"
                           and b.platform == "linux_x86_64")
                      for p in ("torch-cluster", "torch-scatter"))  # fmt: skip
    farm.faults.forge = {forger.id: victim.id}
    run = farm.model.dispatch("farm.yml", selection)
    farm.model.run_until_idle()
    assert run.conclusion == "failure"
    assert victim.id in farm.built and _published(github) < len(farm.built)
    forged = tmp_path / "forged"
    forged.mkdir()
    digest = sha256_file(farm_wheel(farm.matrix, victim, forged, payload=64,
                                    expansion=farm.expansion))  # fmt: skip
    assets = [a for r in github.releases for a in r["assets"]]
    assert all(a.get("digest") != f"sha256:{digest}" for a in assets)


def test_before_split_caches_expired_before_their_link_started(
    tmp_path: Path, github: FakeGitHub
) -> None:
    farm = Farm(github, tmp_path, workflows="before")
    farm.model.dispatch("farm.yml", {**ONE_PLATFORM, "package": "flash-attn"})
    farm.model.run_until_idle()
    # 255 compile shards before any link: the last wait past a day for a runner (GitHub
    # cancels them) or the first caches expire; either way links start without their caches
    assert {"artifact retention", "queue"} & {h.limit for h in farm.model.limits_hit}
    assert any("link found 0 of its 3 compile-shard caches" in n for n in farm.model.notes)


def test_now_a_split_builds_compile_shards_and_link_run_together(
    tmp_path: Path, github: FakeGitHub
) -> None:
    farm = Farm(github, tmp_path)
    run = farm.model.dispatch(
        "farm.yml",
        {
            **ONE_PLATFORM,
            "package": "flash-attn",
            "cuda": "cu130",
            "torch": "2.14",
            "python": "3.12,3.13",
        },
    )
    farm.model.run_until_idle()
    assert farm.plan.splits  # the selection holds split builds
    assert run.conclusion == "success"
    assert farm.model.limits_hit == []
    assert _published(github) == len(farm.built)


def test_a_first_run_with_its_faults_publishes_everything(tmp_path: Path) -> None:
    # stopped after 20 minutes: its group jobs publish this selection within about an hour, and
    # the faults need builds that the later runs still have to make
    outcome = first_run(tmp_path, inputs={**ONE_PLATFORM, "torch": "2.14"}, cancel_after_minutes=20)
    assert outcome.limits == []
    assert outcome.reruns >= 1
    assert sorted(outcome.runs.values()) == ["cancelled", "cancelled", "success", "success"]
    assert (outcome.published, outcome.lost) == (outcome.planned, 0)
    assert outcome.max_output_bytes <= MAX_OUTPUT_BYTES


def test_every_kind_the_catalog_holds_goes_through_the_farm(tmp_path: Path) -> None:
    """A selection holding every ABI kind, arch kind, schema feature and platform of the
    catalog (scenario.every_feature) through the first run and its faults: what keeps
    benchmarks/first_run.py alive on the whole plan when the catalog changes."""
    fake = FakeGitHub(scale=SCALE)
    with fake_github(fake):
        inputs = every_feature(Farm(fake, tmp_path / "probe"))
    outcome = first_run(tmp_path / "run", inputs=inputs, cancel_after_minutes=60)
    assert outcome.limits == []
    assert (outcome.published, outcome.lost) == (outcome.planned, 0)
    assert outcome.planned > 30
    assert outcome.tier1_hours < 24


@pytest.mark.parametrize("lanes", [19, 40])
def test_a_split_groups_compile_shards_run_at_once_then_its_link(
    tmp_path: Path, github: FakeGitHub, lanes: int
) -> None:
    """flash-attn's torch 2.15 group (its compile shards a compile lane each, its link job in a
    shard after them: farm.yml `needs:`) on 19 lanes and on a 40-lane farm (farm.yaml
    pool.lanes, an account with 41 runners): every wheel published, and the run lasts about one
    compile shard and the link, not every compile shard in turn."""
    farm = Farm(github, tmp_path, lanes=lanes)
    inputs = {**ONE_PLATFORM, "package": "flash-attn", "torch": "2.15", "python": "3.12,3.13"}
    run = farm.model.dispatch("farm.yml", inputs)
    farm.model.run_until_idle()
    assert run.conclusion == "success"
    assert farm.model.limits_hit == []
    assert _published(github) == len(farm.built) > 0
    plan = make_plan(
        farm.matrix,
        farm.expansion,
        filters=Filters(
            torch=("2.15",),
            python=("3.12", "3.13"),
            package=("flash-attn",),
            platform=("linux_x86_64",),
        ),
    )
    assert plan.lanes == lanes and plan.compile_lanes >= 2
    (g,) = [g for g in plan.groups if plan.splits.get(g.id)]
    *parts, link = plan.job_minutes(g)
    lanes_used = [n for n in run.nodes if re.fullmatch(r"compile \(\d+of\d+\) / compile", n.name)]
    assert len(lanes_used) == plan.compile_lanes
    assert all(n.result == "success" for n in lanes_used)
    # one compile shard, the link, and each shard's targets and setup: not all shards in turn
    assert run.ended - run.started < sum(parts) + link
    assert run.ended - run.started <= max(parts) + link + 90
    assert farm.model.runners.peak <= lanes + 1
    print(f"lanes={lanes} run_minutes={run.ended - run.started:.0f} parts={parts} link={link}")
