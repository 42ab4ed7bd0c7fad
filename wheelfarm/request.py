"""Wheel requests: read an issue form's answers (package, version, torch, CUDA, Python,
platform) and say where the farm stands on that cell: published, planned or not planned, with
the plan's own reason. The issue text is untrusted: each answer is kept only in the shape the
plan uses, and the reply never repeats text the requester wrote."""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelfarm.core.errors import PlanError, UsageError
from wheelfarm.core.platforms import NAMES
from wheelfarm.github.assets import version_tag
from wheelfarm.matrix.plan import Plan, explain

# the form's labels (.github/ISSUE_TEMPLATE/wheel-request.yml), each with the shape it must have
SHAPES: dict[str, tuple[re.Pattern[str], str]] = {
    "package": (
        re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,98}[A-Za-z0-9])?"),
        "a name like flash-attn",
    ),
    "version": (re.compile(r"[0-9][0-9A-Za-z.!]{0,40}"), "a version like 2.8.3"),
    "torch": (re.compile(r"[0-9]{1,2}\.[0-9]{1,3}"), "a torch minor like 2.14"),
    "cuda": (re.compile(r"cu[0-9]{3}"), "a CUDA tag like cu130"),
    "python": (re.compile(r"3\.[0-9]{1,3}"), "a Python minor like 3.12"),
    "platform": (re.compile("|".join(map(re.escape, NAMES))), " or ".join(NAMES)),
}
# the answer comment ends with the cell it answered, hidden, in the form's own shape: a
# `build-request` label builds exactly that cell, whatever the issue says by then
ANSWERED = "<!-- wheelfarm request: the cell this answers (a build-request label builds it)"
_HEADING = re.compile(r"^###[ \t]+(.{1,40}?)[ \t]*$", re.MULTILINE)
MAX_BODY = 65536  # GitHub's own cap on an issue body


@dataclass(frozen=True)
class Request:
    package: str
    version: str
    torch: str
    cuda: str
    python: str
    platform: str

    @property
    def cell_id(self) -> str:
        return (
            f"{self.package}-{self.version}-{self.cuda}-torch{self.torch}-"
            f"cp{self.python.replace('.', '')}-{self.platform}"
        )


def read_form(body: str) -> Request:
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
    fields: dict[str, str] = {}
    for key, (shape, example) in SHAPES.items():
        value = answers.get(key, "")
        if not shape.fullmatch(value):
            msg = f"the request's {key} is missing or not {example}; edit the issue to fix it"
            raise UsageError(msg)
        fields[key] = value
    try:
        version = str(Version(fields["version"]))
    except InvalidVersion:
        msg = "the request's version is not a version like 2.8.3; edit the issue to fix it"
        raise UsageError(msg) from None
    fields |= {"package": canonicalize_name(fields["package"]), "version": version}
    return Request(**fields)


def answered_block(request: Request) -> str:
    """The hidden block an answer comment ends with: the cell it answered, as a form."""
    form = "".join(f"### {key}\n\n{getattr(request, key)}\n\n" for key in SHAPES)
    return f"{ANSWERED}\n\n{form}-->\n"


def read_answered(comment: str) -> Request:
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


def answer(plan: Plan, request: Request) -> Answer:
    """Published in its release, planned and queued with its tier (this run's queue or the
    next run's, docs/adr/0017-one-pool.md), or not planned with the plan's reason."""
    cell = request.cell_id
    try:
        reason = explain(plan, cell)
    except PlanError as exc:
        return Answer(f"Not planned: {exc}", planned=False)
    if ": already present as " in reason:
        tag = version_tag(request.package, request.version)
        return Answer(f"Published in release {tag} ({reason}).", planned=False)
    queued = (": built by ", ": covered by ", ": deferred: ", "the next farm run builds")
    if any(q in reason for q in queued):
        tier = re.search(r"; tier (\d+)|: tier (\d+)", reason)
        named = f"tier {tier[1] or tier[2]}, " if tier else ""
        return Answer(f"Planned, {named}queued ({reason}).", planned=True)
    return Answer(f"Not planned: {reason}", planned=False)
