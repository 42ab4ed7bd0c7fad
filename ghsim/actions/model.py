"""GitHub Actions, modelled from the workflow files themselves (docs/adr/0013-actions-model.md).

The model reads .github/workflows/*.yml through GitHub's own parser and evaluates every
expression with GitHub's own evaluator (ghsim/actions/workflow.py); nothing here describes the
farm's job graph. It runs what the files say, the way GitHub's documentation says it runs:

- events: a pushed tag or branch (with `paths`), `workflow_dispatch` inputs, `workflow_run`;
- jobs, `needs`, `if:` (with the status functions), `strategy.matrix` (`fromJSON`, `include`,
  `max-parallel`, `fail-fast`), reusable workflows (inputs with types and defaults, outputs,
  permissions no wider than the caller's), job and step outputs, `GITHUB_ENV`;
- each step's `run:` executed with bash in the job's workspace, except what cannot run here,
  which `StandIns` names (docker, pwsh); each action replaced by what its documentation says at
  the pinned version (ghsim/actions/standins.py);
- a scaled clock: the account's concurrent-job limit, the job and step time limits, the 24 h
  queue limit, artifact retention, and concurrency groups (one running and one pending run; a
  newer run cancels the pending one);
- GitHub's run limits (ADR 13): a run cancelled at 35 days, "Re-run failed jobs" refused 30
  days after the run started, cancellation that kills running steps (SIGTERM 7.5 s after
  SIGINT, jobs force-terminated 5 minutes after the cancel), caches restored only on the ref
  that saved them or from the default branch, one content-creating budget for the token that
  every job shares, and `on.schedule` fired on the model's clock (ghsim/actions/cron.py).

A limit GitHub enforces is enforced here as GitHub does (the job fails) and recorded as a
`LimitHit` naming the limit, the job and the value."""

from __future__ import annotations

import fnmatch
import heapq
import itertools
import os
import re
import resource
import shutil
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ghsim.actions.lifecycle import arm_cron, arm_deadline, stop_steps
from ghsim.actions.workflow import (
    EXPR,
    MAP,
    SEQ,
    Bridge,
    ExpressionError,
    Workflow,
    load,
    mapping,
    sequence,
)

HOSTED = re.compile(r"^(ubuntu|windows|macos)-")
REQUEST_SECONDS = 0.5  # one REST answer
CREATING_PER_HOUR = (
    450  # the client keeps 10 % under GitHub's 500 content-creating requests an hour
)


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
class Artifact:
    name: str
    run_id: int
    attempt: int
    files: Path
    size: int
    created: float
    expires: float


@dataclass
class CacheEntry:
    key: str
    ref: str  # the run's ref that saved it: restored on that ref, or anywhere if the default
    files: Path
    size: int
    created: float
    used: float


@dataclass
class Scope:
    """One instance of a workflow inside a run: the top level, or one call of a reusable
    workflow (one per matrix combination of the calling job)."""

    workflow: Workflow
    inputs: dict[str, Any]
    permissions: dict[str, str] | None  # the caller's ceiling; None at the top
    prefix: str
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

    @property
    def nodes(self) -> Iterable[Node]:
        def walk(scope: Scope) -> Iterable[Node]:
            for node in scope.nodes.values():
                yield node
                for call in node.calls:
                    yield from walk(call)

        return walk(self.top) if self.top else ()


StandIn = Callable[["Model", Instance, dict[str, str]], tuple[int, float]]


@dataclass
class StandIns:
    """What cannot run here, and what runs in its place: `run` blocks matched by a regex (the
    whole block), `shells` with no interpreter here, and `actions` by `owner/repo[/path]`."""

    run: list[tuple[re.Pattern[str], StandIn]] = field(default_factory=list)
    shells: dict[str, StandIn] = field(default_factory=dict)
    actions: dict[str, Callable[[Model, Instance, dict[str, Any]], tuple[int, float]]] = field(
        default_factory=dict
    )


class Model:
    def __init__(
        self,
        repo: Path,
        work: Path,
        standins: StandIns,
        *,
        limits: Limits | None = None,
        env: dict[str, str] | None = None,
        variables: dict[str, str] | None = None,
        github_requests: Callable[[], tuple[int, int]] | None = None,
        repository: str = "octo/farm",
        bridge: Bridge | None = None,
    ) -> None:
        self.repo = repo
        self.work = work
        self.standins = standins
        self.limits = limits or Limits()
        self.base_env = env or {}
        self.vars = variables or {}
        # (requests, content-creating requests) GitHub has answered so far: a step's share is
        # timed at GitHub's pace, whatever this machine's load
        self.github_requests = github_requests
        self.repository = repository
        self.bridge = bridge or Bridge.shared()
        self.now = 0.0  # simulated minutes
        self._events: list[tuple[float, int, Callable[[], None], bool]] = []
        self._live = 0  # events that are not timers: the model is idle when none is left
        self.default_branch = "refs/heads/main"
        self.creating_free = 0.0  # when the token's content-creating budget is next free
        self.active: list[Instance] = []  # jobs on a runner
        self._seq = itertools.count()
        self._ids = itertools.count(1000)
        self.queue: list[Instance] = []
        self.busy = 0
        self.runs: list[Run] = []
        self.groups: dict[str, list[Run]] = {}
        self.artifacts: list[Artifact] = []
        self.cache: dict[tuple[str, str], CacheEntry] = {}  # (ref, key)
        self.limits_hit: list[LimitHit] = []
        self.runner_minutes = 0.0
        self.job_log: list[tuple[str, str, float, float]] = []  # (job, result, start, end)
        self.max_output_bytes = 0
        self.artifact_requests = 0  # REST calls the artifact actions made with a token
        self.deployed: list[Path] = []
        self.deployed_at: list[float] = []  # the clock at each deploy of `deployed`
        # runners busy while some job waits (queued, held by max-parallel, or a reusable
        # workflow's call not yet started): their minutes, and the busy-runner minutes
        self.waiting_minutes = 0.0
        self.waiting_busy_minutes = 0.0
        self._calling: dict[int, Node] = {}  # reusable-workflow jobs, by id, while open
        self.faults: dict[str, Any] = {}
        self.notes: list[str] = []  # what the actions reported as errors
        self.logs: dict[str, str] = {}  # the end of each failed job's log
        self.attested = 0  # the most subjects one attestation took
        self.repo_retention_days = 90  # the repository's artifact retention setting

    def evict_cache(self) -> None:
        """Actions' cache policy: entries unused for 7 days go, then the least recently used
        until the repository is under 10 GB."""
        for key, entry in list(self.cache.items()):
            if self.now - entry.used > self.limits.cache_idle_minutes:
                del self.cache[key]
        while sum(e.size for e in self.cache.values()) > self.limits.cache_bytes:
            oldest = min(self.cache.values(), key=lambda e: e.used)
            del self.cache[oldest.ref, oldest.key]

    # -- events ------------------------------------------------------------------------------

    def workflows(self) -> list[Workflow]:
        folder = self.repo / ".github" / "workflows"
        return [load(self.bridge, p) for p in sorted(folder.glob("*.yml"))]

    def push_tag(self, tag: str) -> list[Run]:
        started = []
        for wf in self.workflows():
            push = mapping(wf.on.get("push")) if wf.on.get("push") is not None else {}
            tags = [str(t) for t in sequence(push.get("tags"))]
            if any(fnmatch.fnmatchcase(tag, t) for t in tags):
                started.append(self.start(wf, "push", {}, f"refs/tags/{tag}"))
        return started

    def push_branch(self, branch: str, files: list[str]) -> list[Run]:
        started = []
        for wf in self.workflows():
            if "push" not in wf.on:
                continue
            push = mapping(wf.on["push"]) if wf.on["push"] is not None else {}
            branches = [str(b) for b in sequence(push.get("branches"))]
            if branches and branch not in branches:
                continue
            if "tags" in push and "branches" not in push:
                continue
            paths = [str(p) for p in sequence(push.get("paths"))]
            if paths and not any(_path_match(f, p) for f in files for p in paths):
                continue
            started.append(self.start(wf, "push", {}, f"refs/heads/{branch}"))
        return started

    def dispatch(self, name: str, inputs: dict[str, Any]) -> Run:
        wf = next(w for w in self.workflows() if w.path.name == name)
        return self.start(wf, "workflow_dispatch", inputs, "refs/heads/main")

    def start(self, wf: Workflow, event: str, inputs: dict[str, Any], ref: str) -> Run:
        run = Run(next(self._ids), wf, event, inputs, ref, None, created=self.now)
        self.runs.append(run)
        arm_deadline(self, run)
        run.group = self._group(run)
        if run.group is None:
            self._begin(run)
            return run
        members = [r for r in self.groups.setdefault(run.group, []) if r.status != "completed"]
        cancel_running = self._cancel_in_progress(run)
        for other in members:
            if other.status == "pending":
                other.status, other.conclusion = "completed", "cancelled"  # newer run replaces it
            elif cancel_running:
                self.cancel(other)
        self.groups[run.group].append(run)
        if any(r.status == "in_progress" for r in self.groups[run.group]):
            run.status = "pending"
        else:
            self._begin(run)
        return run

    def _group(self, run: Run) -> str | None:
        token = run.workflow.raw.get("concurrency")
        if token is None:
            return None
        group = (
            mapping(token).get("group")
            if isinstance(token, dict) and token.get("type") == MAP
            else token
        )
        return str(self.value(group, self._context(run, None), {}))

    def _cancel_in_progress(self, run: Run) -> bool:
        token = run.workflow.raw.get("concurrency")
        if not (isinstance(token, dict) and token.get("type") == MAP):
            return False
        return bool(
            self.value(
                mapping(token).get("cancel-in-progress", False), self._context(run, None), {}
            )
        )

    def _begin(self, run: Run) -> None:
        run.status, run.started = "in_progress", self.now
        run.top = Scope(
            run.workflow, self._inputs(run.workflow, run.inputs, "workflow_dispatch"), None, ""
        )
        self._instantiate(run, run.top)
        self._advance(run)

    def cancel(self, run: Run) -> None:
        """The run's cancel button: queued jobs end, running steps stop (lifecycle.stop_steps),
        later steps and jobs run only if `always()` or `cancelled()`."""
        run.cancelled = True
        for inst in list(self.queue):
            if self._run_of(inst) is run:
                self.queue.remove(inst)
                self._finish(inst, "cancelled")
        stop_steps(self, run)
        self._advance(run)

    def rerun_failed(self, run: Run) -> None:
        """ "Re-run failed jobs": a new attempt in which failed and cancelled jobs, and the jobs
        that depend on them, run again; the others keep their results and outputs. GitHub
        refuses it 30 days after the run started (recorded, and nothing runs)."""
        if self.now - run.created > self.limits.rerun_minutes:
            age = (self.now - run.created) / 1440
            self.limits_hit.append(
                LimitHit(
                    "re-run window", run.workflow.path.name, f"run {run.id} is {age:.1f} days old"
                )
            )
            return
        run.attempt += 1
        arm_deadline(self, run)
        run.cancelled = False
        run.status, run.conclusion = "in_progress", ""
        assert run.top is not None
        self._reset(run.top)
        self._advance(run)

    def _reset(self, scope: Scope) -> bool:
        again = False
        for node in _ordered(scope):
            upstream = any(scope.nodes[n].state != "done" for n in node.needs)
            if upstream and node.state == "done":  # a dependent of a job that runs again: whole
                node.state, node.result, node.results, node.outputs = "waiting", "", [], {}
                node.calls, node.succeeded = [], set()
                again = True
            elif node.calls:
                rerun = [self._reset(c) for c in node.calls]  # every call, not the first only
                if any(rerun):
                    node.state, node.result, node.results = "active", "", []
                    node.left = sum(1 for c in node.calls if _open(c))
                    again = True
            elif node.result in {"failure", "cancelled"}:  # its failed instances only
                node.state, node.result, node.results, node.outputs = "waiting", "", [], {}
                again = True
        return again

    def run_until_idle(self, limit_minutes: float = 60 * 24 * 60) -> None:
        """Run events up to `limit_minutes` on the clock (what is later stays scheduled)."""
        while self._live and self._events[0][0] <= limit_minutes:
            when, _, action, timer = heapq.heappop(self._events)
            self._live -= not timer
            self._count_waiting(when)
            self.now = max(self.now, when)
            action()
        if self._live:
            self.now = limit_minutes
            return
        for inst in list(self.queue):
            self.hit("queue", inst, f"still queued after {self.now - inst.queued:.0f} min")

    def _count_waiting(self, until: float) -> None:
        """Add the busy runners up to `until` while anything waits to start."""
        if until > self.now and (self.queue or any(n.pending for n in self._calling.values())):
            self.waiting_minutes += until - self.now
            self.waiting_busy_minutes += (until - self.now) * self.busy

    @property
    def busy_while_waiting(self) -> float:
        """The mean of busy runners while some job waited (0 when none ever did)."""
        return self.waiting_busy_minutes / self.waiting_minutes if self.waiting_minutes else 0.0

    def at(self, minutes: float, action: Callable[[], None], *, timer: bool = False) -> None:
        """Schedule `action`; a timer (a deadline, a schedule) fires only while something else
        keeps the model busy, so an idle model stops."""
        heapq.heappush(self._events, (minutes, next(self._seq), action, timer))
        self._live += not timer

    def _wake(self, inst: Instance, minutes: float, action: Callable[[], None]) -> None:
        """Continue a job at `minutes`, voiding what was scheduled for it before (a kill)."""
        inst.wake += 1
        wake = inst.wake
        self.at(minutes, lambda: action() if inst.wake == wake else None)

    def schedules(self, *names: str) -> None:
        """Fire these workflows' (by file name; all when none is named) `on.schedule` cron lines
        on the model's clock (UTC, minute 0 is ghsim/actions/cron.EPOCH), while it is busy."""
        for wf in self.workflows():
            if names and wf.path.name not in names:
                continue
            for entry in sequence(wf.on.get("schedule")):
                arm_cron(self, wf, str(mapping(entry)["cron"]))

    # -- the job graph -------------------------------------------------------------------------

    def _instantiate(self, run: Run, scope: Scope) -> None:
        for job_id, (template, raw) in scope.workflow.jobs().items():
            needs = [str(n) for n in template.get("needs") or []]
            missing = [n for n in needs if n not in scope.workflow.jobs()]
            if missing:
                msg = (
                    f"{scope.workflow.path.name}: job {job_id} needs {missing}, which do not exist"
                )
                raise RunStartError(msg)
            scope.nodes[job_id] = Node(scope, job_id, template, raw, needs)

    def _advance(self, run: Run) -> None:
        """Start every job whose needs are done; end the run when nothing is left."""
        assert run.top is not None
        progressed = True
        while progressed:
            progressed = False
            for scope in _scopes(run.top):
                for node in _ordered(scope):
                    if node.state == "waiting" and all(
                        scope.nodes[n].state == "done" for n in node.needs
                    ):
                        self._open(run, node)
                        progressed = True
                    elif (
                        node.state == "active"
                        and _reusable(node)
                        and node.left == 0
                        and not node.pending
                    ):
                        self._close_call(run, node)
                        progressed = True
        if run.status == "in_progress" and all(n.state == "done" for n in run.top.nodes.values()):
            self._complete(run)

    def _open(self, run: Run, node: Node) -> None:
        needs = {n: node.scope.nodes[n] for n in node.needs}
        status = _status(needs.values(), run.cancelled)
        ctx = self._context(run, node.scope, needs=needs)
        if not self.truth(node.template.get("if"), ctx, status):
            self._done(run, node, "skipped")
            return
        strategy = mapping(node.raw.get("strategy"))
        try:
            combos = self._matrix(strategy.get("matrix"), ctx)
        except LimitError as exc:
            self.limits_hit.append(LimitHit("matrix", node.name, str(exc)))
            self._done(run, node, "failure")
            return
        except ExpressionError as exc:  # GitHub fails the job: "Error when evaluating 'strategy'"
            self.notes.append(f"{node.name}: error when evaluating 'strategy': {exc}")
            self._done(run, node, "failure")
            return
        node.max_parallel = int(self.value(strategy.get("max-parallel", 0), ctx, status) or 0)
        node.fail_fast = bool(self.value(strategy.get("fail-fast", True), ctx, status))
        todo = [i for i in range(len(combos)) if i not in node.succeeded]
        node.state, node.left = "active", len(todo)
        node.results = ["success"] * (len(combos) - len(todo))
        node.pending = [Instance(node, combos[i], i, len(combos)) for i in todo]
        if _reusable(node):
            self._call_next(run, node)
        else:
            for inst in node.pending:
                inst.queued = self.now
                self.queue.append(inst)
            node.pending = []
            self.at(self.now, self._dispatch)

    def _call_next(self, run: Run, node: Node) -> None:
        """Start the next instances of a reusable-workflow job, up to its max-parallel."""
        self._calling[id(node)] = node
        if run.cancelled and node.pending:
            node.results += ["cancelled"] * len(node.pending)
            node.pending = []
        while node.pending and (
            not node.max_parallel or sum(1 for c in node.calls if _open(c)) < node.max_parallel
        ):
            inst = node.pending.pop(0)
            ref = str(node.template["ref"])
            callee = load(self.bridge, self.repo / ref.removeprefix("./"))
            ctx = self._context(run, node.scope, needs={n: node.scope.nodes[n] for n in node.needs},
                                matrix=inst.matrix, strategy=_strategy(inst, node))  # fmt: skip
            given = {
                k: self.value(v, ctx, {"success": True})
                for k, v in mapping(node.template.get("input-values")).items()
            }
            perms = self._permissions(node.raw, node.scope)
            label = f" ({_label(inst.matrix)})" if inst.matrix else ""
            scope = Scope(
                callee,
                self._inputs(callee, given, "workflow_call"),
                perms,
                f"{node.name}{label} / ",
            )
            self._instantiate(run, scope)
            node.calls.append(scope)
        node.left = sum(1 for c in node.calls if _open(c)) + len(node.pending)

    def _close_call(self, run: Run, node: Node) -> None:
        self._calling.pop(id(node), None)
        results = [n.result for c in node.calls for n in c.nodes.values()] + node.results
        outputs = {}
        on_call = mapping(node.calls[-1].workflow.on.get("workflow_call")) if node.calls else {}
        for key, spec in mapping(on_call.get("outputs")).items() if node.calls else ():
            jobs = {
                j: {"result": n.result, "outputs": n.outputs}
                for j, n in node.calls[-1].nodes.items()
            }
            ctx = {**self._context(run, node.calls[-1]), "jobs": jobs}
            outputs[key] = _text(self.value(mapping(spec).get("value"), ctx, {"success": True}))
        node.outputs = outputs
        self._done(run, node, _aggregate(results))

    def _done(self, run: Run, node: Node, result: str) -> None:
        node.state, node.result = "done", result
        parent = self._caller(run, node.scope)
        if parent is not None and not _open(node.scope) and node.scope in parent.calls:
            failed = _aggregate([n.result for n in node.scope.nodes.values()]) == "failure"
            if parent.fail_fast and failed:
                parent.pending = []
            self._call_next(run, parent)
        self._advance(run)

    def _caller(self, run: Run, scope: Scope) -> Node | None:
        for node in run.nodes:
            if scope in node.calls:
                return node
        return None

    def _complete(self, run: Run) -> None:
        results = [n.result for n in run.nodes if not n.calls]
        run.status, run.ended = "completed", self.now
        run.conclusion = "cancelled" if run.cancelled else _aggregate(results)
        if run.group:
            waiting = [r for r in self.groups[run.group] if r.status == "pending"]
            if waiting:
                self._begin(waiting[0])
        for wf in self.workflows():
            on = wf.on.get("workflow_run")
            if on is not None and run.workflow.name in [
                str(w) for w in sequence(mapping(on).get("workflows"))
            ]:
                self.start(wf, "workflow_run", {}, "refs/heads/main")

    # -- running one job instance --------------------------------------------------------------

    def _dispatch(self) -> None:
        for inst in list(self.queue):
            if self.busy >= self.limits.runners:
                return
            node = inst.node
            if node.max_parallel and node.running >= node.max_parallel:
                inst.queued = self.now  # held back by max-parallel: not yet waiting for a runner
                continue
            self.queue.remove(inst)
            if self.now - inst.queued > self.limits.queue_minutes:
                self.hit("queue", inst, f"queued {self.now - inst.queued:.0f} min")
                self._finish(inst, "cancelled")
                continue
            self.busy += 1
            node.running += 1
            self.active.append(inst)
            self._start_job(inst)

    def hit(self, limit: str, inst: Instance, value: str) -> None:
        self.limits_hit.append(LimitHit(limit, self._job_name(inst), value))

    def _job_name(self, inst: Instance) -> str:
        label = f" ({_label(inst.matrix)})" if inst.matrix else ""
        return f"{inst.node.name}{label}"

    def _run_of(self, inst: Instance) -> Run:
        return next(r for r in self.runs if any(n is inst.node for n in r.nodes))

    def _start_job(self, inst: Instance) -> None:
        run = self._run_of(inst)
        node = inst.node
        inst.started = self.now
        inst.permissions = self._permissions(node.raw, node.scope)
        if node.scope.permissions is not None:
            wider = [f"{k}: {v}" for k, v in inst.permissions.items()
                     if _rank(v) > _rank(node.scope.permissions.get(k, "none"))]  # fmt: skip
            if wider:
                self.hit("permissions", inst, f"asks for {', '.join(wider)} beyond its caller's")
                self._finish(inst, "failure")
                return
        ctx = self._context(run, node.scope, needs={n: node.scope.nodes[n] for n in node.needs},
                            matrix=inst.matrix, strategy=_strategy(inst, node))  # fmt: skip
        label = str(self.value(node.raw.get("runs-on"), ctx, {"success": True}))
        inst.self_hosted = not HOSTED.match(label)
        timeout = float(
            self.value(node.raw.get("timeout-minutes", 360), ctx, {"success": True}) or 360
        )
        cap = self.limits.token_minutes if inst.self_hosted else self.limits.hosted_job_minutes
        if timeout > cap:
            self.hit(
                "job time limit",
                inst,
                f"timeout-minutes {timeout:.0f} > {cap} ({'self-hosted token' if inst.self_hosted else 'hosted'})",
            )
            timeout = cap
        inst.timeout = timeout
        inst.workspace = self.work / f"run{run.id}" / f"job{next(self._ids)}"
        (inst.workspace / "_temp").mkdir(parents=True)
        inst.env = {
            k: _text(self.value(v, ctx, {"success": True}))
            for k, v in mapping(node.raw.get("env")).items()
        }
        for key, v in mapping(node.scope.workflow.raw.get("env")).items():
            inst.env.setdefault(key, _text(self.value(v, ctx, {"success": True})))
        self._wake(inst, self.now + 0.5, lambda: self._step(inst))  # the runner's setup

    def _step(self, inst: Instance) -> None:
        run = self._run_of(inst)
        steps_raw = sequence(inst.node.raw.get("steps"))
        steps_tpl = inst.node.template.get("steps") or []
        if inst.step >= len(steps_raw):
            self._end_job(inst)
            return
        raw, tpl = mapping(steps_raw[inst.step]), steps_tpl[inst.step]
        inst.step += 1
        status, ctx = self._step_state(run, inst)
        step_id = str(tpl.get("id") or f"__step{inst.step}")
        if not self.truth(tpl.get("if"), ctx, status):
            inst.cancelled = inst.cancelled or run.cancelled
            inst.steps[step_id] = {"outputs": {}, "outcome": "skipped", "conclusion": "skipped"}
            self._wake(inst, self.now, lambda: self._step(inst))
            return
        env = {
            **inst.env,
            **{k: _text(self.value(v, ctx, status)) for k, v in mapping(raw.get("env")).items()},
        }
        limit = float(
            self.value(raw.get("timeout-minutes", inst.timeout), ctx, status) or inst.timeout
        )
        if "timeout-minutes" in raw and limit > self.limits.step_minutes:
            self.hit(
                "step time limit",
                inst,
                f"step {tpl.get('name') or step_id}: timeout-minutes {limit:.0f} > {self.limits.step_minutes}",
            )
            limit = self.limits.step_minutes
        if "uses" in raw:
            uses = str(raw["uses"])
            name = uses.split("@", 1)[0]
            handler = self.standins.actions.get(name)
            if handler is None:
                msg = f"no stand-in for action {uses}"
                raise KeyError(msg)
            inputs = {k: self.value(v, ctx, status) for k, v in mapping(raw.get("with")).items()}
            code, minutes = handler(self, inst, {**inputs, "__uses": uses, "__env": env})
            outputs, inst.action_outputs = inst.action_outputs, {}
        else:
            code, minutes, outputs = self._run(inst, raw, env, ctx, status)
        if minutes > limit:
            self.hit(
                "step timed out",
                inst,
                f"step {tpl.get('name') or step_id}: {minutes:.0f} min > {limit:.0f}",
            )
            code, minutes = 124, limit
        elapsed = self.now + minutes - inst.started
        if elapsed > inst.timeout:
            self.hit("job timed out", inst, f"{elapsed:.0f} min > {inst.timeout:.0f}")
            inst.step_ends, inst.step_id = inst.started + inst.timeout, step_id
            self._wake(inst, inst.step_ends, lambda: self._end_job(inst, timed_out=True))
            return
        continue_on_error = bool(self.value(raw.get("continue-on-error", False), ctx, status))
        outcome = "success" if code == 0 else "failure"
        inst.steps[step_id] = {"outputs": outputs, "outcome": outcome,
                               "conclusion": "success" if continue_on_error else outcome}  # fmt: skip
        if code != 0 and not continue_on_error:
            inst.failed = True
        inst.step_ends, inst.step_id = self.now + minutes, step_id
        self._wake(inst, inst.step_ends, lambda: self._step(inst))

    def _step_state(self, run: Run, inst: Instance) -> tuple[dict[str, bool], dict[str, Any]]:
        """The status functions and contexts a step's expressions see."""
        status = {"success": not inst.failed and not run.cancelled, "failure": inst.failed,
                  "cancelled": run.cancelled, "always": True}  # fmt: skip
        ctx = self._context(run, inst.node.scope, needs={n: inst.node.scope.nodes[n] for n in inst.node.needs},
                            matrix=inst.matrix, strategy=_strategy(inst, inst.node), inst=inst)  # fmt: skip
        return status, ctx

    def _run(
        self,
        inst: Instance,
        raw: dict[str, Any],
        env: dict[str, str],
        ctx: dict[str, Any],
        status: dict[str, bool],
    ) -> tuple[int, float, dict[str, str]]:
        script = _text(self.value(raw["run"], ctx, status))
        shell = str(
            self.value(raw.get("shell"), ctx, status) or self._default_shell(inst) or "bash"
        )
        assert inst.workspace is not None
        files = {
            k: inst.workspace / "_temp" / f"{k}-{inst.step}"
            for k in ("output", "env", "path", "summary")
        }
        for f in files.values():
            f.write_text("")
        full = {
            **self.base_env,
            **env,
            "GITHUB_OUTPUT": str(files["output"]),
            "GITHUB_ENV": str(files["env"]),
            "GITHUB_PATH": str(files["path"]),
            "GITHUB_STEP_SUMMARY": str(files["summary"]),
            "GITHUB_WORKSPACE": str(inst.workspace),
            "GITHUB_REPOSITORY": self.repository,
            "GITHUB_RUN_ID": str(self._run_of(inst).id),
            "GITHUB_RUN_ATTEMPT": str(self._run_of(inst).attempt),
            "RUNNER_TEMP": str(inst.workspace / "_temp"),
        }
        full["PATH"] = os.pathsep.join([*inst.path_dirs, full.get("PATH", os.environ["PATH"])])
        for pattern, standin in self.standins.run:
            if pattern.fullmatch(script.strip()):
                code, minutes = standin(self, inst, {**full, "__script": script})
                return code, minutes, _outputs(files["output"])
        if shell != "bash":
            standin = self.standins.shells.get(shell)
            if standin is None:
                msg = f"{self._job_name(inst)}: no {shell} here and no stand-in for it"
                raise KeyError(msg)
            code, minutes = standin(self, inst, {**full, "__script": script})
            return code, minutes, _outputs(files["output"])
        cpu = _child_cpu()
        asked = self.github_requests() if self.github_requests is not None else (0, 0)
        result = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=inst.workspace, env=full, capture_output=True, text=True, check=False,
        )  # fmt: skip
        used = _child_cpu() - cpu
        log = inst.workspace / "_temp" / "log.txt"
        with log.open("a", encoding="utf-8") as fh:
            fh.write(f"$ {script}\n{result.stdout}{result.stderr}[exit {result.returncode}]\n")
        for line in files["env"].read_text().splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                inst.env[k] = v
        inst.path_dirs = [*files["path"].read_text().split(), *inst.path_dirs]
        minutes = max(0.5, used / 60)
        if self.github_requests is not None:  # the step's GitHub calls, at GitHub's pace
            total, creating = (b - a for a, b in zip(asked, self.github_requests(), strict=True))
            minutes += total * REQUEST_SECONDS / 60 + self.creating(creating)

        return result.returncode, minutes, _outputs(files["output"])

    def creating(self, requests: int) -> float:
        """Minutes until `requests` content-creating requests are answered: the secondary limit
        is the token's, so jobs creating content at once queue for one budget."""
        start = max(self.now, self.creating_free)
        self.creating_free = start + requests * 60 / CREATING_PER_HOUR
        return self.creating_free - self.now if requests else 0.0

    def _default_shell(self, inst: Instance) -> str | None:
        for raw in (inst.node.raw, inst.node.scope.workflow.raw):
            run = mapping(mapping(raw.get("defaults")).get("run"))
            if "shell" in run:
                return str(run["shell"])
        return None

    def _end_job(self, inst: Instance, *, timed_out: bool = False) -> None:
        run = self._run_of(inst)
        result = "failure" if inst.failed or timed_out else "success"
        if inst.cancelled and result == "success":
            result = "cancelled"
        ctx = self._context(run, inst.node.scope, matrix=inst.matrix, inst=inst)
        outputs = {
            k: _text(self.value(v, ctx, {"success": True}))
            for k, v in mapping(inst.node.raw.get("outputs")).items()
        }
        size = sum(
            len(k.encode("utf-16-le")) + len(v.encode("utf-16-le")) for k, v in outputs.items()
        )
        self.max_output_bytes = max(self.max_output_bytes, size)
        if size > self.limits.job_outputs_bytes:
            self.hit(
                "job outputs", inst, f"{size:,} bytes (UTF-16) > {self.limits.job_outputs_bytes:,}"
            )
            result, outputs = "failure", {}
        inst.node.outputs.update(outputs)
        self.busy -= 1
        inst.node.running -= 1
        self.active.remove(inst)
        self.runner_minutes += self.now - inst.started
        if inst.workspace is not None and result != "success":
            log = inst.workspace / "_temp" / "log.txt"
            self.logs[self._job_name(inst)] = (
                log.read_text(encoding="utf-8")[-4000:] if log.is_file() else ""
            )
        if inst.workspace is not None and not self.faults.get("keep_workspaces"):
            shutil.rmtree(inst.workspace, ignore_errors=True)
        self._finish(inst, result)
        self.at(self.now, self._dispatch)

    def _finish(self, inst: Instance, result: str) -> None:
        node = inst.node
        if result == "success":
            node.succeeded.add(inst.index)
        self.job_log.append((self._job_name(inst), result, inst.started, self.now))
        node.results.append(result)
        node.left -= 1
        run = self._run_of(inst)
        if result == "failure" and node.fail_fast:
            for other in [i for i in self.queue if i.node is node]:
                self.queue.remove(other)
                node.results.append("cancelled")
                node.left -= 1
        if node.left == 0:
            self._done(run, node, _aggregate(node.results))

    # -- contexts and expressions ---------------------------------------------------------------

    def _context(
        self,
        run: Run,
        scope: Scope | None,
        *,
        needs: dict[str, Node] | None = None,
        matrix: dict[str, Any] | None = None,
        strategy: dict[str, Any] | None = None,
        inst: Instance | None = None,
    ) -> dict[str, Any]:
        ref = run.ref
        return {
            "github": {
                "repository": self.repository,
                "repository_owner": self.repository.split("/")[0],
                "run_id": str(run.id),
                "run_attempt": str(run.attempt),
                "event_name": run.event,
                "ref": ref,
                "ref_name": ref.rsplit("/", 1)[-1],
                "sha": "0" * 40,
                "token": "simulated",
                "workflow": run.workflow.name,
                "workspace": str(inst.workspace) if inst and inst.workspace else "",
                "event": {"inputs": run.inputs},
            },
            "inputs": scope.inputs if scope else run.inputs,
            "vars": self.vars,
            "secrets": {"GITHUB_TOKEN": "simulated"},
            "needs": {
                k: {"result": n.result, "outputs": n.outputs} for k, n in (needs or {}).items()
            },
            "matrix": matrix or {},
            "strategy": strategy or {},
            "steps": inst.steps if inst else {},
            "env": inst.env if inst else {},
            "runner": {
                "os": "Linux",
                "environment": "self-hosted" if inst and inst.self_hosted else "github-hosted",
                "temp": str(inst.workspace / "_temp") if inst and inst.workspace else "",
            },
            "job": {"status": "success"},
        }

    def value(self, token: Any, ctx: dict[str, Any], status: dict[str, bool]) -> Any:
        """A token's value: mappings and sequences element by element, expressions evaluated."""
        if isinstance(token, dict) and "type" in token:
            if token["type"] == EXPR:
                return self.bridge.evaluate(token["expr"], ctx, status)
            if token["type"] == MAP:
                return {str(e["Key"]): self.value(e["Value"], ctx, status) for e in token["map"]}
            if token["type"] == SEQ:
                return [self.value(v, ctx, status) for v in token["seq"]]
        return token

    def truth(self, token: Any, ctx: dict[str, Any], status: dict[str, bool]) -> bool:
        if token is None:
            return bool(status.get("success"))
        value = self.value(token, ctx, status)
        return bool(value) and value != "false"

    def _matrix(self, token: Any, ctx: dict[str, Any]) -> list[dict[str, Any]]:
        if token is None:
            return [{}]
        value = self.value(token, ctx, {"success": True})
        if isinstance(value, str):
            value = self.bridge.evaluate(value, ctx, {}) if value.startswith("${{") else value
        if not isinstance(value, dict):
            msg = f"matrix is not a mapping: {str(value)[:80]!r}"
            raise LimitError(msg)
        include = value.pop("include", []) or []
        exclude = value.pop("exclude", []) or []
        axes = dict(value)
        for k, v in axes.items():
            if not isinstance(v, list):
                msg = f"matrix axis {k!r} is not a list"
                raise LimitError(msg)
        combos: list[dict[str, Any]] = (
            [dict(zip(axes, c, strict=True)) for c in itertools.product(*axes.values())]
            if axes
            else []
        )
        combos = [
            c for c in combos if not any(all(c.get(k) == v for k, v in e.items()) for e in exclude)
        ]
        for extra in include:
            match = [c for c in combos if all(c.get(k) == v for k, v in extra.items() if k in axes)]
            if match and axes:
                for c in match:
                    c.update(extra)
            else:
                combos.append(dict(extra))
        if not combos:
            msg = "matrix has no combinations"
            raise LimitError(msg)
        if len(combos) > self.limits.matrix_jobs:
            msg = f"{len(combos)} jobs > {self.limits.matrix_jobs}"
            raise LimitError(msg)
        return combos

    def _inputs(self, wf: Workflow, given: dict[str, Any], trigger: str) -> dict[str, Any]:
        spec = (
            mapping(mapping(wf.on.get(trigger)).get("inputs"))
            if wf.on.get(trigger) is not None
            else {}
        )
        out: dict[str, Any] = {}
        for key, token in spec.items():
            info = mapping(token)
            kind = str(info.get("type", "string"))
            value = given.get(key, info.get("default", "" if kind == "string" else None))
            if kind == "number" and value not in (None, ""):
                value = float(value)
                value = int(value) if value.is_integer() else value
            elif kind == "boolean" and isinstance(value, str):
                value = value == "true"
            out[key] = value
        return out

    def _permissions(self, raw: dict[str, Any], scope: Scope) -> dict[str, str]:
        granted = raw.get("permissions", scope.workflow.raw.get("permissions"))
        if isinstance(granted, str):
            return dict.fromkeys(_SCOPES, "read" if granted == "read-all" else "write")
        return {k: str(v) for k, v in mapping(granted).items()}


_SCOPES = ("actions", "attestations", "contents", "id-token", "pages", "pull-requests")


class LimitError(Exception):
    pass


class RunStartError(Exception):
    """A workflow GitHub would refuse when the run starts (a `needs` naming no job, say)."""


def _rank(level: str) -> int:
    return {"none": 0, "read": 1, "write": 2}.get(level, 0)


def _status(needs: Iterable[Node], cancelled: bool) -> dict[str, bool]:
    results = [n.result for n in needs]
    return {
        "success": all(r == "success" for r in results) and not cancelled,
        "failure": any(r == "failure" for r in results),
        "cancelled": cancelled,
        "always": True,
    }


def _aggregate(results: list[str]) -> str:
    if any(r == "failure" for r in results):
        return "failure"
    if any(r == "cancelled" for r in results):
        return "cancelled"
    if results and all(r == "skipped" for r in results):
        return "skipped"
    return "success"


def _reusable(node: Node) -> bool:
    return node.template.get("type") == "reusableWorkflowJob"


def _open(scope: Scope) -> bool:
    return any(n.state != "done" for n in scope.nodes.values())


def _scopes(scope: Scope) -> Iterable[Scope]:
    yield scope
    for node in list(scope.nodes.values()):
        for call in node.calls:
            yield from _scopes(call)


def _ordered(scope: Scope) -> list[Node]:
    return list(scope.nodes.values())


def _strategy(inst: Instance, node: Node) -> dict[str, Any]:
    return {"job-index": inst.index, "job-total": inst.total, "fail-fast": node.fail_fast,
            "max-parallel": node.max_parallel or inst.total}  # fmt: skip


def _label(matrix: dict[str, Any]) -> str:
    parts = []
    for v in matrix.values():
        if isinstance(v, dict):
            parts.append(str(v.get("id", v.get("name", "…"))))
        else:
            parts.append(str(v))
    return ", ".join(parts)


def _text(value: Any) -> str:
    """How GitHub turns an expression's value into a string (env, outputs, inputs)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value)
    return str(value)


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _outputs(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT's `key=value` lines and `key<<DELIM` blocks."""
    out: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delim = line.split("<<", 1)
            body = []
            i += 1
            while i < len(lines) and lines[i] != delim:
                body.append(lines[i])
                i += 1
            out[key] = "\n".join(body)
        elif "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
        i += 1
    return out


def _path_match(path: str, pattern: str) -> bool:
    """GitHub's `paths` filter: `*` within a folder, `**` across folders."""
    regex = re.escape(pattern).replace(r"\*\*", "\0").replace(r"\*", "[^/]*").replace("\0", ".*")
    return re.fullmatch(regex, path) is not None
