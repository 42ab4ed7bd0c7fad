"""request.yml's steps as GitHub runs them (bash -eo pipefail, the issue text only in `env:`), with
the real `wheelfarm request` against a fake GitHub's Releases and a stand-in `gh` that records
what it would post or dispatch. The Actions model (tests/actions) has no `issues` event yet, so
the jobs' `if:` gates are read here as text; each step's shell runs for real."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ghsim.fakegithub import FakeGitHub, fake_github
from tests.roots import REPO
from tests.workflows import WORKFLOWS, run_block
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.matrix.expand import Build, Cell, expand
from wheelfarm.matrix.load import load_matrix

pytestmark = pytest.mark.integration
WORKFLOW = "request.yml"
LABELS = {"package": "Package", "version": "Version", "torch": "torch", "cuda": "CUDA",
          "python": "Python", "platform": "Platform"}  # fmt: skip
EXPANSION = expand(load_matrix(REPO))
GH = """#!/bin/sh
printf '%s\\n' "$@" > "{calls}"
while [ $# -gt 0 ]; do
  if [ "$1" = --body-file ]; then cat "$2" > "{comment}"; fi
  shift
done
"""


def form(cell: Cell) -> str:
    """The issue body GitHub renders from the form: a `### Label` heading above each answer."""
    return "".join(f"### {LABELS[k]}\n\n{getattr(cell, k)}\n\n" for k in LABELS)


def wheel_of(build: Build) -> str | None:
    """A wheel file name whose build id is `build`'s (a cpython Linux build), or None."""
    cell = build.covers[0]
    label = build.id.split("-")[-3]
    cp = f"cp{cell.python.replace('.', '')}"
    name = build.id.rsplit(f"-{build.version}-", 1)[0].replace("-", "_")
    wheel = f"{name}-{build.version}+{label}-{cp}-{cp}-manylinux_2_28_x86_64.whl"
    try:
        return wheel if build_id_from_wheel(wheel) == build.id else None
    except ValueError:
        return None


PUBLISHED = next(b for b in EXPANSION.builds if wheel_of(b) is not None)
PLANNED = next(b for b in EXPANSION.builds if b.id != PUBLISHED.id and wheel_of(b) is not None)


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with fake_github() as fake:
        release = fake.add_release(f"{PUBLISHED.covers[0].package}-v{PUBLISHED.version}")
        fake.add_asset(release, str(wheel_of(PUBLISHED)), b"wheel")
        yield fake


class Runner:
    """One job's workspace: the farm's matrix (wheelfarm finds its root from the folder),
    RUNNER_TEMP, GITHUB_OUTPUT and the stand-in gh."""

    def __init__(self, tmp: Path, github: FakeGitHub) -> None:
        self.work, self.temp, self.bin = tmp / "work", tmp / "temp", tmp / "bin"
        shutil.copytree(REPO.matrix, self.work / "matrix")
        self.temp.mkdir()
        self.bin.mkdir()
        self.calls, self.comment, self.output = tmp / "calls", tmp / "comment.md", tmp / "output"
        gh = self.bin / "gh"
        gh.write_text(GH.format(calls=self.calls, comment=self.comment))
        gh.chmod(0o755)
        self.env = {
            "PATH": os.pathsep.join([str(self.bin), str(Path(sys.executable).parent),
                                     os.environ["PATH"]]),
            "HOME": str(tmp),
            "GITHUB_REPOSITORY": "octo/farm",
            "GITHUB_REF_NAME": "main",
            "GITHUB_API_URL": github.base,
            "GITHUB_OUTPUT": str(self.output),
            "RUNNER_TEMP": str(self.temp),
        }  # fmt: skip

    def step(self, job: str, step: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """The step's `run:` as GitHub's default Linux shell runs it."""
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", run_block(WORKFLOW, job, step)],
            cwd=self.work, env={**self.env, **env}, capture_output=True, text=True, check=False,
            timeout=300,
        )  # fmt: skip

    def outputs(self) -> dict[str, str]:
        lines = self.output.read_text().splitlines() if self.output.exists() else []
        return dict(line.split("=", 1) for line in lines)


@pytest.fixture
def runner(tmp_path: Path, github: FakeGitHub) -> Runner:
    return Runner(tmp_path, github)


def answer(runner: Runner, body: str) -> str:
    """The comment the answer job posts on issue 7 for `body`."""
    result = runner.step("answer", "Answer on the issue",
                         {"BODY": body, "ISSUE": "7", "GITHUB_TOKEN": "t", "GH_TOKEN": "t"})  # fmt: skip
    assert result.returncode == 0, result.stderr
    calls = runner.calls.read_text().splitlines()
    assert calls[:4] == ["issue", "comment", "7", "--repo"]
    return runner.comment.read_text()


def test_a_published_request_names_its_release(runner: Runner) -> None:
    text = answer(runner, form(PUBLISHED.covers[0]))
    assert text.startswith(
        f"Published in release {PUBLISHED.covers[0].package}-v{PUBLISHED.version}"
    )


def test_a_planned_request_is_queued_with_its_tier(runner: Runner) -> None:
    assert re.match(r"Planned, tier \d+, queued", answer(runner, form(PLANNED.covers[0])))


def test_an_excluded_request_is_not_planned_with_the_plans_reason(runner: Runner) -> None:
    excluded = EXPANSION.excluded[0]
    text = answer(runner, form(excluded.cell))
    assert text.strip() == f"Not planned: {excluded.cell.id}: excluded by {excluded.rule}"


HOSTILE = [
    "### Package\n\n$(touch PWNED)\n\n",
    "### Package\n\n`touch PWNED`\n\n### Version\n\n'; touch PWNED; echo '\n",
    '### Package\n\n${{ github.token }}\n\n### CUDA\n\n"$(touch PWNED)"\n',
    "### Package\n\nflash-attn\u202e\U0001d52d\U0001d536\n\n### Python\n\n\uff13.\uff11\uff12\n",
    "### Package\n\n" + "x" * 65_500 + "\n",  # GitHub keeps at most 65,536 characters
]


@pytest.mark.parametrize(
    "body", HOSTILE, ids=["subshell", "quotes", "expression", "unicode", "huge"]
)
def test_hostile_issue_text_is_data_and_gets_a_clean_answer(runner: Runner, body: str) -> None:
    text = answer(runner, body)
    assert text.startswith("wheelfarm request: error: the request's ")  # the form's fix, named
    assert text.strip().count("\n") == 0 and len(text) < 400
    assert not list(runner.work.parent.rglob("PWNED"))
    # a maintainer's label on the same text: the read fails cleanly and nothing is dispatched
    runner.calls.unlink()
    result = runner.step("dispatch", "Read the request", {"BODY": body, "GITHUB_TOKEN": "t"})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert runner.outputs().get("planned") != "true" and not runner.calls.exists()
    assert not list(runner.work.parent.rglob("PWNED"))


def test_the_build_request_label_dispatches_farm_for_exactly_that_cell(runner: Runner) -> None:
    cell = PLANNED.covers[0]
    read = runner.step("dispatch", "Read the request", {"BODY": form(cell), "GITHUB_TOKEN": "t"})
    assert read.returncode == 0, read.stderr
    outputs = runner.outputs()
    assert outputs["planned"] == "true"
    env = {k.upper(): outputs[k] for k in ("package", "cuda", "torch", "python", "platform")}
    result = runner.step(
        "dispatch", "Dispatch the farm for that selection", {"GH_TOKEN": "t", **env}
    )
    assert result.returncode == 0, result.stderr
    assert runner.calls.read_text().splitlines() == [
        "workflow", "run", "farm.yml", "--repo", "octo/farm", "--ref", "main",
        "-f", f"package={cell.package}", "-f", f"cuda={cell.cuda}", "-f", f"torch={cell.torch}",
        "-f", f"python={cell.python}", "-f", f"platform={cell.platform}",
    ]  # fmt: skip


def test_a_published_request_dispatches_nothing(runner: Runner) -> None:
    read = runner.step("dispatch", "Read the request",
                       {"BODY": form(PUBLISHED.covers[0]), "GITHUB_TOKEN": "t"})  # fmt: skip
    assert read.returncode == 0, read.stderr
    assert runner.outputs()["planned"] == "false"  # the dispatch step's `if:` is false


def test_the_issue_text_reaches_steps_only_through_env() -> None:
    """No `${{ }}` in any `run:`, the issue's fields only in `env:` values; the gates as GitHub
    evaluates them (the model has no `issues` event to run them)."""
    data = yaml.safe_load((WORKFLOWS / WORKFLOW).read_text())
    for job in data["jobs"].values():
        for step in job["steps"]:
            assert "${{" not in step.get("run", "")
            for value in step.get("env", {}).values():
                assert "github.event.issue" not in str(value) or str(value).startswith(
                    "${{ github.event.issue."
                )
    assert "github.event.action != 'labeled'" in data["jobs"]["answer"]["if"]
    assert "github.event.label.name == 'build-request'" in data["jobs"]["dispatch"]["if"]
    assert data["permissions"] == {} and "actions" not in data["jobs"]["answer"]["permissions"]
