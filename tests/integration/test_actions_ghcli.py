"""The model's `gh` (ghsim/actions/ghcli.py) refuses what GitHub refuses: a dispatch without
`actions: write`, to a workflow with no `workflow_dispatch` trigger or with an input it does
not declare, a comment over GitHub's 65,536 characters, and any call without GH_TOKEN."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from textwrap import dedent

import pytest

from ghsim.actions.model import Model, Run
from ghsim.actions.standins import standins
from ghsim.fakegithub import FakeGitHub, fake_github

pytestmark = pytest.mark.integration
TARGET = """
    on:
      workflow_dispatch:
        inputs: {package: {type: string}}
    jobs:
      a: {runs-on: ubuntu-24.04, steps: [{run: "true"}]}
"""


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    with fake_github() as fake:
        yield fake


def run_step(tmp_path: Path, github: FakeGitHub, script: str, permissions: str) -> Model:
    """A `push` workflow whose one step runs `script` with these permissions."""
    folder = tmp_path / "repo" / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "target.yml").write_text(dedent(TARGET), encoding="utf-8")
    (folder / "caller.yml").write_text(dedent(f"""
        on: push
        permissions: {{}}
        jobs:
          a:
            runs-on: ubuntu-24.04
            permissions: {permissions}
            steps:
              - env: {{GH_TOKEN: "${{{{ github.token }}}}"}}
                run: {script}
    """), encoding="utf-8")  # fmt: skip
    env = {"PATH": os.environ["PATH"], "GITHUB_API_URL": github.base}
    model = Model(tmp_path / "repo", tmp_path / "work", standins(), env=env)
    model.held.add("target.yml")
    model.push_branch("main", ["x"])
    model.run_until_idle()
    return model


def dispatched(model: Model) -> list[Run]:
    return [r for r in model.runs if r.workflow.path.name == "target.yml"]


def test_a_dispatch_starts_the_workflow_with_its_inputs(tmp_path: Path, github: FakeGitHub) -> None:
    model = run_step(
        tmp_path, github, "gh workflow run target.yml -f package=a", "{actions: write}"
    )
    assert [(r.event, r.inputs, r.ref) for r in dispatched(model)] == [
        ("workflow_dispatch", {"package": "a"}, "refs/heads/main")
    ]


@pytest.mark.parametrize(
    ("script", "permissions", "refusal"),
    [
        ("gh workflow run target.yml -f package=a", "{actions: read}", "HTTP 403"),
        ("gh workflow run caller.yml", "{actions: write}", "no 'workflow_dispatch' trigger"),
        ("gh workflow run target.yml -f cuda=x", "{actions: write}", "Unexpected inputs"),
    ],
    ids=["permission", "trigger", "input"],
)
def test_github_refuses_a_dispatch_and_the_step_fails(
    tmp_path: Path, github: FakeGitHub, script: str, permissions: str, refusal: str
) -> None:
    model = run_step(tmp_path, github, script, permissions)
    assert dispatched(model) == [] and model.runs[0].conclusion == "failure"
    assert any(refusal in note for note in model.notes)


def test_a_comment_is_posted_in_githubs_shape(tmp_path: Path, github: FakeGitHub) -> None:
    script = "printf 'hi' > b.md && gh issue comment 3 --repo octo/farm --body-file b.md"
    model = run_step(tmp_path, github, repr(script), "{issues: write}")
    assert model.runs[0].conclusion == "success"
    (comment,) = github.comments[3]
    assert comment["body"] == "hi" and comment["issue_url"].endswith("/repos/octo/farm/issues/3")


def test_a_comment_over_65536_characters_is_refused(tmp_path: Path, github: FakeGitHub) -> None:
    script = (
        "printf '%65537s' | tr ' ' x > b.md && gh issue comment 3 --repo octo/farm --body-file b.md"
    )
    model = run_step(tmp_path, github, repr(script), "{issues: write}")
    assert model.runs[0].conclusion == "failure" and github.comments.get(3, []) == []
    assert "HTTP 422" in "".join(model.logs.values())


def test_gh_without_a_token_fails(tmp_path: Path, github: FakeGitHub) -> None:
    model = run_step(tmp_path, github, "GH_TOKEN= gh workflow run target.yml", "{actions: write}")
    assert dispatched(model) == [] and model.runs[0].conclusion == "failure"
    assert "set the GH_TOKEN environment variable" in "".join(model.logs.values())
