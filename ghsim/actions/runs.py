"""What a run is made of, as the model keeps it: the run, its scopes (the workflow and each call
of a reusable workflow), their jobs (`Node`) and each job's instances (one per matrix
combination), GitHub's documented limits, and what a hit limit leaves behind. Plain records and
the small rules on them (a job's aggregate result, its status functions, its display name), so
that every concern of the model (model.py) shares one vocabulary."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ghsim.actions.workflow import Workflow


@dataclass(frozen=True)
class Limits:
    """GitHub's documented numbers (docs.github.com: usage limits, workflow syntax)."""

    runners: int = 20  # concurrent jobs, Free plan
    job_outputs_bytes: int = 1_048_576  # all outputs of a job, counted as UTF-16
    matrix_jobs: int = 256
    hosted_job_minutes: int = 360
    step_minutes: int = 360
    token_minutes: int = 24 * 60  # a job's GITHUB_TOKEN
    queue_minutes: int = 24 * 60
    cache_bytes: int = 10 * 1024**3
    cache_idle_minutes: int = 7 * 24 * 60
    retention_max_days: int = 90
    run_minutes: int = 35 * 24 * 60  # a workflow run, waiting included: then it is cancelled
    rerun_minutes: int = 30 * 24 * 60  # "Re-run failed jobs" after the run's start
    sigterm_minutes: float = 7.5 / 60  # a cancelled step: SIGINT, SIGTERM 7.5 s later
    force_minutes: float = 5.0  # jobs still running 5 minutes after the cancel are terminated


@dataclass(frozen=True)
class LimitHit:
    limit: str
    job: str
    value: str

    def line(self) -> str:
        return f"{self.limit}: {self.job}: {self.value}"


@dataclass
class Scope:
    """One instance of a workflow inside a run: the top level, or one call of a reusable
    workflow (one per matrix combination of the calling job)."""

    run: Run
    workflow: Workflow
    inputs: dict[str, Any]
    permissions: dict[str, str] | None  # the caller's ceiling; None at the top
    prefix: str
    caller: Node | None = None  # the reusable-workflow job that called it
    nodes: dict[str, Node] = field(default_factory=dict)


@dataclass
class Node:
    """One job of one scope; a matrix job runs as several instances."""

    scope: Scope
    job_id: str
    template: dict[str, Any]
    raw: dict[str, Any]
    needs: list[str]
    state: str = "waiting"  # waiting -> active -> done
    result: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    pending: list[Instance] = field(default_factory=list)
    running: int = 0
    left: int = 0
    results: list[str] = field(default_factory=list)
    calls: list[Scope] = field(default_factory=list)  # a reusable-workflow job's scopes
    max_parallel: int = 0
    fail_fast: bool = True
    succeeded: set[int] = field(default_factory=set)  # instances a rerun keeps

    @property
    def name(self) -> str:
        return f"{self.scope.prefix}{self.job_id}"


@dataclass
class Instance:
    node: Node
    matrix: dict[str, Any]
    index: int
    total: int
    queued: float = 0.0
    started: float = 0.0
    workspace: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    step: int = 0
    failed: bool = False
    cancelled: bool = False
    timeout: float = 0.0
    permissions: dict[str, str] = field(default_factory=dict)
    path_dirs: list[str] = field(default_factory=list)
    self_hosted: bool = False
    action_outputs: dict[str, str] = field(default_factory=dict)  # the last action's outputs
    wake: int = 0  # the number of the event that may continue this job; older ones are void
    step_ends: float = 0.0  # when the running step ends
    step_id: str = ""
    uploads: int = 0  # artifacts this job uploaded (500 at most)

    @property
    def run(self) -> Run:
        return self.node.scope.run

    @property
    def name(self) -> str:
        """The job's name as GitHub shows it: the matrix values in parentheses."""
        label = f" ({matrix_label(self.matrix)})" if self.matrix else ""
        return f"{self.node.name}{label}"


@dataclass
class Run:
    id: int
    workflow: Workflow
    event: str
    inputs: dict[str, Any]
    ref: str
    group: str | None
    attempt: int = 1
    status: str = "queued"  # queued, pending, in_progress, completed
    conclusion: str = ""
    cancelled: bool = False
    top: Scope | None = None
    started: float = 0.0
    ended: float = 0.0
    created: float = 0.0  # the run's start: the 30-day re-run window counts from it
    payload: dict[str, Any] = field(default_factory=dict)  # `github.event` beyond `inputs`

    @property
    def nodes(self) -> Iterable[Node]:
        def walk(scope: Scope) -> Iterable[Node]:
            for node in scope.nodes.values():
                yield node
                for call in node.calls:
                    yield from walk(call)

        return walk(self.top) if self.top else ()


class LimitError(Exception):
    pass


class RunStartError(Exception):
    """A workflow GitHub would refuse when the run starts (a `needs` naming no job, say)."""


def status_of(needs: Iterable[Node], cancelled: bool) -> dict[str, bool]:
    """The status functions a job's `if:` sees, from the jobs it needs."""
    results = [n.result for n in needs]
    return {
        "success": all(r == "success" for r in results) and not cancelled,
        "failure": any(r == "failure" for r in results),
        "cancelled": cancelled,
        "always": True,
    }


def aggregate(results: list[str]) -> str:
    """One result for many (a matrix's instances, a called workflow's jobs, a run)."""
    if any(r == "failure" for r in results):
        return "failure"
    if any(r == "cancelled" for r in results):
        return "cancelled"
    if results and all(r == "skipped" for r in results):
        return "skipped"
    return "success"


def reusable(node: Node) -> bool:
    return node.template.get("type") == "reusableWorkflowJob"


def is_open(scope: Scope) -> bool:
    return any(n.state != "done" for n in scope.nodes.values())


def scopes(scope: Scope) -> Iterable[Scope]:
    """`scope` and every scope its reusable-workflow jobs called, depth first."""
    yield scope
    for node in list(scope.nodes.values()):
        for call in node.calls:
            yield from scopes(call)


def strategy_of(inst: Instance) -> dict[str, Any]:
    node = inst.node
    return {"job-index": inst.index, "job-total": inst.total, "fail-fast": node.fail_fast,
            "max-parallel": node.max_parallel or inst.total}  # fmt: skip


def matrix_label(matrix: dict[str, Any]) -> str:
    parts = []
    for v in matrix.values():
        if isinstance(v, dict):
            parts.append(str(v.get("id", v.get("name", "…"))))
        else:
            parts.append(str(v))
    return ", ".join(parts)


def text(value: Any) -> str:
    """How GitHub turns an expression's value into a string (env, outputs, inputs)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)
