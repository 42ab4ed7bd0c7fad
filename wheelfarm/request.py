"""Wheel requests: read an issue form's answers (package, version, torch, CUDA, Python,
platform) in the words users type (`13.0`, `2.14.0`, `Windows`) and say where the farm stands
on that cell: published (with the command that installs it and its index), planned (with the
date the next scheduled run should publish it), or not planned and which axis is why (the
package, the version, a combination torch does not ship, or a package file's exclusion in its
own words, with the nearest planned cells). The issue text is untrusted: each answer is kept
only in the shape the plan uses, and the reply never repeats text the requester wrote."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelfarm import axes
from wheelfarm.core.commands import install_commands
from wheelfarm.core.errors import UsageError
from wheelfarm.core.platforms import NAMES
from wheelfarm.github.assets import version_tag
from wheelfarm.matrix.expand import Build
from wheelfarm.matrix.model import Matrix, Package
from wheelfarm.matrix.plan import Plan

# the form's labels (.github/ISSUE_TEMPLATE/wheel-request.yml), each with the shape it is kept in
SHAPES: dict[str, tuple[re.Pattern[str], str]] = {
    "package": (
        re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,98}[A-Za-z0-9])?"),
        "a name like flash-attn",
    ),
    "version": (re.compile(r"[0-9][0-9A-Za-z.!]{0,40}"), "a version like 2.8.3"),
    "torch": (re.compile(r"[0-9]{1,2}\.[0-9]{1,3}"), "a torch version like 2.14 or 2.14.1"),
    "cuda": (re.compile(r"cu[0-9]{3}"), "a CUDA version like 13.0 or cu130"),
    "python": (re.compile(r"3\.[0-9]{1,3}"), "a Python version like 3.12"),
    "platform": (re.compile("|".join(map(re.escape, NAMES))), "Linux, Linux aarch64 or Windows"),
}
# the answer comment ends with the cell it answered, hidden, in the form's own shape: a
# `build-request` label builds exactly that cell, whatever the issue says by then
ANSWERED = "<!-- wheelfarm request: the cell this answers (a build-request label builds it)"
_HEADING = re.compile(r"^###[ \t]+(.{1,40}?)[ \t]*$", re.MULTILINE)
MAX_BODY = 65536  # GitHub's own cap on an issue body
MAX_WORDS = 60  # characters of one answer read as a user's words
# what users type, read into the shapes above (case and spaces aside); anything else is refused
_TORCH = re.compile(r"(?:py)?(?:torch)?v?([0-9]{1,2}\.[0-9]{1,3})(?:\.[0-9]{1,3})?(?:\+\w{1,12})?")
_CUDA = re.compile(r"(?:cuda)?(?:cu)?([0-9]{2})\.?([0-9])(?:\.[0-9]{1,3})?")
_PYTHON = re.compile(r"(?:python|py|cpython)?(?:3\.([0-9]{1,2})(?:\.[0-9]{1,3})?|cp3([0-9]{1,2}))")
_S = "[_-]?"  # what may part two words: windows-11, linux_x86_64
_WIN = rf"win(?:dows)?{_S}(?:10|11)?{_S}(?:amd64|x64|x86{_S}64|64)?{_S}(?:bit)?"
_ARM = rf"(?:(?:linux|ubuntu|debian){_S})?(?:aarch64|arm64|arm|sbsa|gh200)"
_LINUX = rf"(?:linux|ubuntu|debian|wsl2?|fedora|rhel){_S}(?:x86{_S}64|amd64|x64|64)?"
_PLATFORMS = (
    (re.compile(_WIN), "win_amd64"),
    (re.compile(_ARM), "linux_aarch64"),
    (re.compile(_LINUX), "linux_x86_64"),
)  # fmt: skip
_NO_CUDA = {
    "cuda": re.compile(r"cpu|none|rocm.*|mps|xpu"),
    "platform": re.compile(r"mac(?:os)?.*|darwin|osx|apple.*"),
}
_WHY_NOT = {
    "cuda": "the farm builds CUDA wheels only: give the CUDA of a CUDA build of torch (13.0 is "
    "cu130; torch.version.cuda prints it)",
    "platform": "torch ships no CUDA build for macOS, so the farm builds none",
}


def _words(text: str) -> str:
    """An answer as the patterns read it: lower case, no spaces."""
    return re.sub(r"\s+", "", text.lower())


def _read_torch(words: str) -> str | None:
    found = _TORCH.fullmatch(words)
    return found[1] if found else None


def _read_cuda(words: str) -> str | None:
    found = _CUDA.fullmatch(words)
    return f"cu{found[1]}{found[2]}" if found else None


def _read_python(words: str) -> str | None:
    found = _PYTHON.fullmatch(words)
    return f"3.{found[1] or found[2]}" if found else None


def _read_platform(words: str) -> str | None:
    for shape, name in _PLATFORMS:
        if shape.fullmatch(words):
            return name
    return words if words in NAMES else None


READERS: dict[str, Callable[[str], str | None]] = {
    "torch": _read_torch,
    "cuda": _read_cuda,
    "python": _read_python,
    "platform": _read_platform,
}


def _field(key: str, value: str) -> str:
    """One answer in its shape, from the user's words where it has a reader; a UsageError that
    names the field and the words it takes, never the requester's text."""
    shape, example = SHAPES[key]
    reader = READERS.get(key)
    if reader is not None and len(value) <= MAX_WORDS:
        words = _words(value)
        if key in _NO_CUDA and _NO_CUDA[key].fullmatch(words):
            msg = f"the request's {key}: {_WHY_NOT[key]}"
            raise UsageError(msg)
        value = reader(words) or value
    if key == "version" and re.fullmatch(r"[vV][0-9].*", value):  # a tag's spelling: v2.8.3
        value = value[1:]
    if key == "cuda" and re.fullmatch(r"(?:cuda)?(?:cu)?[0-9]{1,2}", _words(value)):
        msg = "the request's cuda names a major only: give its minor too (13.0 or 13.2: cu130)"
        raise UsageError(msg)
    if not shape.fullmatch(value):
        msg = f"the request's {key} is missing or not {example}; edit the issue to fix it"
        raise UsageError(msg)
    return value


def read_form(body: str) -> axes.Wanted:
    """The form's six answers, each in its shape; UsageError names the first answer that is
    missing, of another shape or given twice (by its label, not its text)."""
    parts = _HEADING.split(body[:MAX_BODY])
    answers: dict[str, str] = {}
    for label, text in zip(parts[1::2], parts[2::2], strict=True):
        key = label.strip().lower()
        if key in answers:  # a heading typed into an answer: which one is meant is unclear
            msg = f"the request's {key} is answered twice; edit the issue to fix it"
            raise UsageError(msg)
        if key in SHAPES:
            answers[key] = text.strip()
    fields = {key: _field(key, answers.get(key, "")) for key in SHAPES}
    try:
        version = str(Version(fields["version"]))
    except InvalidVersion:
        msg = "the request's version is not a version like 2.8.3; edit the issue to fix it"
        raise UsageError(msg) from None
    fields |= {"package": canonicalize_name(fields["package"]), "version": version}
    return axes.Wanted(**fields)


def answered_block(request: axes.Wanted) -> str:
    """The hidden block an answer comment ends with: the cell it answered, as a form."""
    form = "".join(f"### {key}\n\n{getattr(request, key)}\n\n" for key in SHAPES)
    return f"{ANSWERED}\n\n{form}-->\n"


def read_answered(comment: str) -> axes.Wanted:
    """The cell an answer comment answered (its last hidden block); UsageError when it holds
    none (an answer to a form that could not be read)."""
    start = comment.rfind(ANSWERED)
    if start < 0:
        msg = (
            "the request's answer names no cell (the form could not be read): edit the issue "
            "so its answer names the cell, then add the build-request label again"
        )
        raise UsageError(msg)
    return read_form(comment[start + len(ANSWERED) :].split("-->", 1)[0])


@dataclass(frozen=True)
class Answer:
    text: str
    planned: bool  # the farm would build it: a maintainer's label may dispatch the farm


@dataclass(frozen=True)
class Context:
    """What an answer needs beside the plan: the matrix, the farm's site (its Pages URL, for
    the install command and link of a published wheel; None when unknown) and when the next
    scheduled farm run starts (farm.yml's cron; None when the root has no farm.yml)."""

    matrix: Matrix
    site: str | None = None
    next_run: datetime | None = None
    cron: str | None = None


def answer(plan: Plan, request: axes.Wanted, context: Context) -> Answer:
    """Which axis the farm cannot serve, else published / planned / deferred for its cell."""
    matrix = context.matrix
    package = axes.find_package(matrix, request.package)
    if package is None:
        return Answer(
            f"Not planned: {axes.unknown_package(matrix, request.package)}", planned=False
        )
    request = replace(request, package=package.name)
    want = request
    if request.version not in axes.versions_of(package):
        head = axes.unpackaged_version(package, request.version)
        newest = _serving(plan, request, package) or axes.versions_of(package)[-1]
        instead = answer(plan, replace(request, version=newest), context)
        return Answer(
            f"Not planned: {head} For {package.name} {newest} on this cell: {instead.text}",
            planned=instead.planned,
        )
    if problem := axes.grid_problem(matrix, want):
        return Answer(f"Not planned: {problem}{_nearest(plan, want)}", planned=False)
    if (excluded := _excluded(plan, want, package, context)) is not None:
        return excluded
    cell_id = request.id
    build = next((b for b in plan.expansion.builds if any(c.id == cell_id for c in b.covers)), None)
    if build is None:  # torch ships it and no rule names it: the expansion dropped it
        return Answer(
            f"Not planned: {_what(want)} is no cell of the plan.{_nearest(plan, want)}",
            planned=False,
        )
    return _status(plan, build, context, cell_id)


def _excluded(plan: Plan, want: axes.Wanted, package: Package, context: Context) -> Answer | None:
    """The rule that excludes the wanted cell, with the package's other version that serves
    it where one does (else the nearest planned cells); None: no rule excludes it."""
    ex = next((ex for ex in plan.expansion.excluded if ex.cell.id == want.id), None)
    if ex is None:
        return None
    text = f"Not planned: {_what(want)} is excluded: {axes.exclusion(ex, package)}."
    if other := _serving(plan, want, package):  # sageattention: post3 below post6's floor
        served = answer(plan, replace(want, version=other), context)
        return Answer(f"{text} {package.name} {other} serves this cell: {served.text}",
                      planned=served.planned)  # fmt: skip
    return Answer(f"{text}{_nearest(plan, want)}", planned=False)


def _serving(plan: Plan, want: axes.Wanted, package: Package) -> str | None:
    """The newest other version of the package whose build serves the wanted cell: the one to
    offer where the asked version does not (a release per torch below a stable-ABI floor)."""
    covered = {c.id for b in plan.expansion.builds if b.package == package.name for c in b.covers}
    for version in reversed(axes.versions_of(package)):
        if version != want.version and replace(want, version=version).id in covered:
            return version
    return None


def _what(want: axes.Wanted) -> str:
    return f"{want.package} {want.version} for {want.cell_text()}"


def _nearest(plan: Plan, want: axes.Wanted) -> str:
    return axes.suggestions(axes.nearest(plan.expansion, want))


def _status(plan: Plan, build: Build, context: Context, cell_id: str) -> Answer:
    """Published, deferred, past the next run's days, or queued, with the date."""
    if build.id in plan.deferred:
        waits = ", ".join(plan.deferred[build.id])
        return Answer(
            f"Planned, deferred: {build.id} imports {waits}, not published yet "
            f"(farm_requires); the first run after they are builds it.",
            planned=True,
        )
    later = next((g for g in plan.later if any(b.id == build.id for b in g.builds)), None)
    if later is not None:
        where = plan.placed[later.id]
        days = context.matrix.farm.pool.run_days
        start = _when(context, timedelta(days=days))
        return Answer(
            f"Planned, tier {where.tier}, after the next run: it is past that run's "
            f"{days:g} days (farm.yaml pool.run_days), so the run after it builds "
            f"{build.id}{start}.",
            planned=True,
        )
    if any(b.id == build.id for b in plan.todo):
        group = plan.group_of(build.id)
        where = plan.placed[group.id]
        return Answer(
            f"Planned, tier {where.tier}, queued: {build.id} is place {where.place} of "
            f"{len(plan.groups)} in the queue (shard {where.shard}).{_eta(context, where.ends)}",
            planned=True,
        )
    return Answer(_published(build, cell_id, context), planned=False)


def _when(context: Context, after: timedelta) -> str:
    """', which starts at the earliest 2026-12-14 05:41 UTC' from the next run, or ''."""
    if context.next_run is None or context.cron is None:
        return ""
    from wheelfarm.core.schedule import next_run  # noqa: PLC0415 - dated answers only

    at = next_run(context.cron, context.next_run + after - timedelta(minutes=1))
    return f", which starts at the earliest {at:%Y-%m-%d %H:%M} UTC"


def _eta(context: Context, minutes: float) -> str:
    """The predicted publication as a UTC date from the next scheduled run."""
    hours = f"{minutes / 60:.1f} h"
    if context.next_run is None:
        return f" It is predicted to be published {hours} after the next farm run starts."
    done = context.next_run + timedelta(minutes=minutes)
    return (
        f" The next scheduled farm run starts {context.next_run:%Y-%m-%d %H:%M} UTC (farm.yml's "
        f"cron `{context.cron}`); it is predicted to be published by {done:%Y-%m-%d %H:%M} UTC, "
        f"{hours} after that."
    )


def _published(build: Build, cell_id: str, context: Context) -> str:
    """The release, and the install commands and index of the farm's site for the cell."""
    tag = version_tag(build.package, build.version)
    cell = next(c for c in build.covers if c.id == cell_id)
    head = f"Published in release {tag} (built as {build.id})."
    if context.site is None:
        return head + f" Its index is `{cell.cuda}/torch{cell.torch}/` of the farm's site."
    index = f"{context.site}{cell.cuda}/torch{cell.torch}/"
    torch = context.matrix.torch_index(cell.cuda) if build.torch_minor else None
    commands = install_commands(build.distribution, f"{build.version}+{build.label}", index, torch)
    return (
        f"{head} Install it:\n\n```\n{commands.pip}\n```\n\nor with uv (in a venv):\n\n```\n"
        f"{commands.uv}\n```\n\nIndex: {index}{build.distribution}/"
    )
