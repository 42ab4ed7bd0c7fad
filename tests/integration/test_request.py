"""request.yml through the Actions model (ghsim/actions): `issues` events with their activity
types, the real `wheelfarm request` against the fake GitHub's Releases, its answer posted by the
model's `gh` as an issue comment on the fake GitHub, and a maintainer's label dispatching
farm.yml in the model (held there: only how it was started is read)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ghsim.actions.model import Instance, Model, Run
from ghsim.actions.standins import standins
from ghsim.fakegithub import FakeGitHub, fake_github
from tests.roots import REPO
from tests.workflows import WORKFLOWS
from wheelfarm.core.wheelname import build_id_from_wheel
from wheelfarm.matrix.expand import Build, Cell, expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.request import ANSWERED

pytestmark = pytest.mark.integration
WORKFLOW = "request.yml"
LABELS = {"package": "Package", "version": "Version", "torch": "torch", "cuda": "CUDA",
          "python": "Python", "platform": "Platform"}  # fmt: skip
EXPANSION = expand(load_matrix(REPO))
ISSUE = 7


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


def _installed(model: Model, inst: Instance, env: dict[str, str]) -> tuple[int, float]:
    """`python -m pip install .`: the farm is installed in this Python already."""
    return 0, 0.5


@pytest.fixture
def model(tmp_path: Path, github: FakeGitHub) -> Model:
    env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
           "HOME": str(tmp_path), "GITHUB_API_URL": github.base}  # fmt: skip
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONPATH"})  # this checkout's farm
    pip = [(re.compile(r"python -m pip install \."), _installed)]
    model = Model(REPO.path, tmp_path / "work", standins(run=pip), env=env)
    model.held.add("farm.yml")
    model.faults["keep_workspaces"] = True  # a file a hostile body made would stay to be seen
    return model


def event(model: Model, action: str, body: str, label: str | None = None) -> list[Run]:
    """Issue 7, a wheel request (labelled `build-request` too when that label is the event's)."""
    names = ["wheel-request", *([label] if label else [])]
    issue = {"number": ISSUE, "title": "Wheel request", "body": body,
             "labels": [{"name": n} for n in names]}  # fmt: skip
    runs = model.issue(action, issue, label)
    model.run_until_idle()
    return runs


MARK = "<!-- wheelfarm request answer -->\n"


def comments(github: FakeGitHub) -> list[str]:
    """The answers on the issue as a maintainer reads them: each marked as the farm's on its
    first line, the cell it answered hidden at its end."""
    kept = github.comments.get(ISSUE, [])
    assert all(c["body"].startswith(MARK) for c in kept)
    return [c["body"].removeprefix(MARK).split(ANSWERED, 1)[0].rstrip() for c in kept]


def farm_runs(model: Model) -> list[Run]:
    return [r for r in model.runs if r.workflow.path.name == "farm.yml"]


@pytest.mark.parametrize("action", ["opened", "edited"])
def test_a_published_request_names_its_release(
    model: Model, github: FakeGitHub, action: str
) -> None:
    (run,) = event(model, action, form(PUBLISHED.covers[0]))
    assert (run.event, run.group, run.conclusion) == ("issues", f"request-{ISSUE}", "success")
    (text,) = comments(github)
    assert text.startswith(
        f"Published in release {PUBLISHED.covers[0].package}-v{PUBLISHED.version}"
    )
    cell = PUBLISHED.covers[0]  # the repository's Pages site: the install command and its index
    assert f"--extra-index-url https://octo.github.io/farm/{cell.cuda}/torch{cell.torch}/" in text
    assert farm_runs(model) == []


def test_a_planned_request_is_queued_with_its_tier(model: Model, github: FakeGitHub) -> None:
    event(model, "opened", form(PLANNED.covers[0]))
    (text,) = comments(github)
    assert re.match(r"Planned, tier \d+, (queued|after the next run)", text)
    assert re.search(r"20\d\d-\d\d-\d\d \d\d:\d\d UTC", text)  # from farm.yml's cron


def test_an_excluded_request_is_not_planned_with_the_plans_reason(
    model: Model, github: FakeGitHub
) -> None:
    excluded = EXPANSION.excluded[0]
    event(model, "opened", form(excluded.cell))
    (text,) = comments(github)
    cell = excluded.cell
    assert text.startswith(f"Not planned: {cell.package} {cell.version} for {cell.cuda} / ")
    assert "is excluded: matrix/packages/" in text


def test_an_action_outside_on_issues_types_starts_nothing(model: Model) -> None:
    assert event(model, "closed", form(PLANNED.covers[0])) == []


def test_the_build_request_label_dispatches_farm_for_exactly_that_cell(
    model: Model, github: FakeGitHub
) -> None:
    cell = PLANNED.covers[0]
    event(model, "opened", form(cell))
    (run,) = event(model, "labeled", form(cell), "build-request")
    assert run.conclusion == "success" and len(comments(github)) == 1
    (farm,) = farm_runs(model)
    assert (farm.event, farm.ref) == ("workflow_dispatch", "refs/heads/main")
    assert farm.inputs == {"package": cell.package, "version": cell.version, "cuda": cell.cuda,
                           "torch": cell.torch, "python": cell.python,
                           "platform": cell.platform}  # fmt: skip


def test_the_label_builds_the_answered_cell_not_an_edit_made_just_before_it(
    model: Model, github: FakeGitHub
) -> None:
    """Issue 49 row 5: the label's event carries the body as edited just before it (another
    cell); what is built is the cell the answer the maintainer read names, version included."""
    answered, edited = PLANNED.covers[0], PUBLISHED.covers[0]
    event(model, "opened", form(answered))
    event(model, "labeled", form(edited), "build-request")
    (farm,) = farm_runs(model)
    assert (farm.inputs["package"], farm.inputs["version"]) == (answered.package, answered.version)
    assert farm.inputs["python"] == answered.python


def test_a_label_before_any_answer_dispatches_nothing(model: Model, github: FakeGitHub) -> None:
    (run,) = event(model, "labeled", form(PLANNED.covers[0]), "build-request")
    assert run.conclusion == "failure" and farm_runs(model) == []
    assert "the request's answer names no cell" in "".join(model.logs.values())


def test_each_edit_edits_the_one_answer_and_no_one_elses(model: Model, github: FakeGitHub) -> None:
    """Issue 49 row 4: an edit answers by editing the farm's one comment; a comment someone
    else wrote starting with the same mark is left alone."""
    github.comments[ISSUE] = [{"id": 1, "body": MARK + "not the farm's",
                               "user": {"login": "mallory", "type": "User"}}]  # fmt: skip
    event(model, "opened", form(PLANNED.covers[0]))
    event(model, "edited", form(PUBLISHED.covers[0]))
    event(model, "edited", form(PUBLISHED.covers[0]))
    theirs, ours = github.comments[ISSUE]
    assert theirs["body"] == MARK + "not the farm's"
    assert ours["user"]["login"] == "github-actions[bot]"
    assert ours["body"].removeprefix(MARK).startswith("Published in release")


def test_a_body_past_linuxs_128_kib_for_one_variable_is_answered(
    model: Model, github: FakeGitHub
) -> None:
    """Issue 49 row 3: 65,536 characters of four bytes each (about 256 KiB) reached bash as
    one environment variable: `Argument list too long`, no answer. Read from the event file
    it is answered."""
    head = form(PLANNED.covers[0]) + "### Anything else\n\n"
    body = head + "\U0001f600" * (65_536 - len(head))
    assert len(body.encode()) > 128 * 1024
    (run,) = event(model, "opened", body)
    assert run.conclusion == "success", "".join(model.logs.values())[-2000:]
    (text,) = comments(github)
    assert re.match(r"Planned, tier \d+, ", text)


def test_another_label_does_nothing(model: Model, github: FakeGitHub) -> None:
    (run,) = event(model, "labeled", form(PLANNED.covers[0]), "bug")
    assert run.conclusion == "skipped"
    assert (comments(github), farm_runs(model)) == ([], [])


def test_a_published_request_dispatches_nothing(model: Model) -> None:
    event(model, "opened", form(PUBLISHED.covers[0]))
    (run,) = event(model, "labeled", form(PUBLISHED.covers[0]), "build-request")
    assert run.conclusion == "success" and farm_runs(model) == []


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
def test_hostile_issue_text_is_data_and_gets_a_clean_answer(
    model: Model, github: FakeGitHub, tmp_path: Path, body: str
) -> None:
    event(model, "opened", body)
    (text,) = comments(github)
    assert text.startswith("wheelfarm request: error: the request's ")  # the form's fix, named
    assert text.strip().count("\n") == 0 and len(text) < 400 and "simulated" not in text
    # a maintainer's label on the same text: the read fails cleanly and nothing is dispatched
    (run,) = event(model, "labeled", body, "build-request")
    assert run.conclusion == "failure" and "Traceback" not in "".join(model.logs.values())
    assert farm_runs(model) == [] and len(comments(github)) == 1
    assert not list(tmp_path.rglob("PWNED"))


def test_the_issue_text_reaches_steps_only_through_the_event_file() -> None:
    """No `${{ }}` in any `run:`, no issue text in any `env:` value (the number only): the body
    is read from $GITHUB_EVENT_PATH (the model runs the blocks as they are; this reads that
    they stay so)."""
    data = yaml.safe_load((WORKFLOWS / WORKFLOW).read_text())
    for job in data["jobs"].values():
        for step in job["steps"]:
            assert "${{" not in step.get("run", "")
            for value in step.get("env", {}).values():
                assert "github.event.issue" not in str(value) or str(value) == (
                    "${{ github.event.issue.number }}"
                )
    assert data["permissions"] == {} and "actions" not in data["jobs"]["answer"]["permissions"]
