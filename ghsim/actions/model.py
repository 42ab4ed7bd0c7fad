"""GitHub Actions, modelled from the workflow files themselves (docs/adr/0013-actions-model.md).

The model reads .github/workflows/*.yml through GitHub's own parser and evaluates every
expression with GitHub's own evaluator (workflow.py); nothing here describes the farm's job
graph. It runs what the files say, the way GitHub's documentation says it runs:

- events: a pushed tag or branch (with `paths`), `workflow_dispatch` inputs, `workflow_run`,
  `issues` (its activity types; `gh workflow run` in a step dispatches: ghcli.py),
  `on.schedule` (cron.py, lifecycle.py), and concurrency groups (one running and one pending
  run; a newer run cancels the pending one) — here;
- the job graph: `needs`, `if:`, matrix jobs, reusable workflows, "Re-run failed jobs" (graph.py);
- matrix and expressions: the contexts, `strategy.matrix`, typed inputs, permissions
  (contexts.py);
- steps: `run:` blocks in bash, actions and what cannot run here through stand-ins, the job and
  step time limits, job outputs (steps.py; the actions themselves: standins.py);
- queue and clock: the scaled clock, the account's runners and the 24 h queue limit (clock.py);
- artifacts and caches (store.py);
- a run's limits: cancelled at 35 days, cancellation that stops running steps (lifecycle.py).

`Model` holds one of each and is what callers use. A limit GitHub enforces is enforced as GitHub
does (the job fails) and recorded as a `LimitHit` naming the limit, the job and the value."""

from __future__ import annotations

import fnmatch
import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ghsim.actions import contexts
from ghsim.actions.clock import Clock, Runners
from ghsim.actions.contexts import Contexts
from ghsim.actions.graph import Graph
from ghsim.actions.lifecycle import arm_cron, arm_deadline, stop_steps
from ghsim.actions.runs import Instance, LimitHit, Limits, Run, RunStartError, Scope
from ghsim.actions.steps import StandIn, StandIns, Steps
from ghsim.actions.store import Artifact, CacheEntry, Store
from ghsim.actions.workflow import Bridge, Workflow, load, mapping, sequence

__all__ = [
    "Artifact",
    "CacheEntry",
    "Instance",
    "LimitHit",
    "Limits",
    "Model",
    "Run",
    "RunStartError",
    "StandIn",
    "StandIns",
]


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
        # (requests, content-creating requests) GitHub has answered so far: a step's share is
        # timed at GitHub's pace, whatever this machine's load
        self.github_requests = github_requests
        self.repository = repository
        self.bridge = bridge or Bridge.shared()
        self.default_branch = "refs/heads/main"
        self.clock = Clock()
        self.runners = Runners(self)
        self.contexts = Contexts(self.bridge, self.limits, repository, variables or {})
        self.store = Store(self.limits)
        self.graph = Graph(self)
        self.steps = Steps(self)
        self._ids = itertools.count(1000)
        self.runs: list[Run] = []
        self.groups: dict[str, list[Run]] = {}
        self.limits_hit: list[LimitHit] = []
        self.job_log: list[tuple[str, str, float, float]] = []  # (job, result, start, end)
        self.max_output_bytes = 0
        self.artifact_requests = 0  # REST calls the artifact actions made with a token
        self.deployed: list[Path] = []
        self.deployed_at: list[float] = []  # the clock at each deploy of `deployed`
        self.faults: dict[str, Any] = {}
        self.notes: list[str] = []  # what the actions reported as errors
        self.logs: dict[str, str] = {}  # the end of each failed job's log
        self.attested = 0  # the most subjects one attestation took
        self.held: set[str] = set()  # workflow files whose runs are recorded, never begun

    # -- what callers read: each concern's own state -----------------------------------------

    @property
    def now(self) -> float:
        """The clock, in simulated minutes (a test may move it)."""
        return self.clock.now

    @now.setter
    def now(self, minutes: float) -> None:
        self.clock.now = minutes

    @property
    def _events(self) -> list[tuple[float, int, Callable[[], None], bool]]:
        return self.clock.events

    @property
    def _live(self) -> int:
        return self.clock.live

    @property
    def artifacts(self) -> list[Artifact]:
        return self.store.artifacts

    @property
    def cache(self) -> dict[tuple[str, str], CacheEntry]:
        return self.store.cache

    @property
    def runner_minutes(self) -> float:
        return self.runners.runner_minutes

    @property
    def busy_while_waiting(self) -> float:
        return self.runners.busy_while_waiting

    def at(self, minutes: float, action: Callable[[], None], *, timer: bool = False) -> None:
        self.clock.at(minutes, action, timer=timer)

    def value(self, token: Any, ctx: dict[str, Any], status: dict[str, bool]) -> Any:
        return self.contexts.value(token, ctx, status)

    def truth(self, token: Any, ctx: dict[str, Any], status: dict[str, bool]) -> bool:
        return self.contexts.truth(token, ctx, status)

    def hit(self, limit: str, inst: Instance, value: str) -> None:
        self.limits_hit.append(LimitHit(limit, inst.name, value))

    def new_id(self) -> int:
        """A run's or a job's number (one sequence, as GitHub's ids are)."""
        return next(self._ids)

    # -- events ------------------------------------------------------------------------------

    def workflows(self) -> list[Workflow]:
        folder = self.repo / ".github" / "workflows"
        return [load(self.bridge, p) for p in sorted(folder.glob("*.yml"))]

    def workflow(self, path: str) -> Workflow:
        """The workflow file at `path` in the repository (a reusable workflow's `uses`)."""
        return load(self.bridge, self.repo / path)

    def push_tag(self, tag: str) -> list[Run]:
        started = []
        for wf in self.workflows():
            push = _trigger(wf, "push") or {}
            tags = [str(t) for t in sequence(push.get("tags"))]
            if any(fnmatch.fnmatchcase(tag, t) for t in tags):
                started.append(self.start(wf, "push", {}, f"refs/tags/{tag}"))
        return started

    def push_branch(self, branch: str, files: list[str]) -> list[Run]:
        started = []
        for wf in self.workflows():
            push = _trigger(wf, "push")
            if push is None:
                continue
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

    def issue(self, action: str, issue: dict[str, Any], label: str | None = None) -> list[Run]:
        """An `issues` event: `action` (opened, edited, labeled...) on `issue` (number, title,
        body, labels: [{name}]), `label` the one just added; it runs, on the default branch,
        each workflow whose `on.issues.types` lists the action (any action when none do)."""
        payload: dict[str, Any] = {"action": action, "issue": issue}
        if label is not None:
            payload["label"] = {"name": label}
        started = []
        for wf in self.workflows():
            spec = _trigger(wf, "issues")
            types = [str(t) for t in sequence((spec or {}).get("types"))]
            if spec is not None and (not types or action in types):
                started.append(self.start(wf, "issues", {}, self.default_branch, payload))
        return started

    def start(
        self,
        wf: Workflow,
        event: str,
        inputs: dict[str, Any],
        ref: str,
        payload: dict[str, Any] | None = None,
    ) -> Run:
        """A new run of `wf`: it begins at once, or waits in its concurrency group (a `held`
        workflow's run stays queued, for a test to read how it was started)."""
        run = Run(self.new_id(), wf, event, inputs, ref, None, created=self.now)
        run.payload = payload or {}
        self.runs.append(run)
        if wf.path.name in self.held:
            return run
        arm_deadline(self, run)
        run.group, cancel_running = self.contexts.concurrency(run)
        if run.group is None:
            self.begin(run)
            return run
        members = [r for r in self.groups.setdefault(run.group, []) if r.status != "completed"]
        for other in members:
            if other.status == "pending":
                other.status, other.conclusion = "completed", "cancelled"  # newer run replaces it
            elif cancel_running:
                self.cancel(other)
        self.groups[run.group].append(run)
        if any(r.status == "in_progress" for r in self.groups[run.group]):
            run.status = "pending"
        else:
            self.begin(run)
        return run

    def begin(self, run: Run) -> None:
        run.status, run.started = "in_progress", self.now
        given = contexts.inputs(run.workflow, run.inputs, "workflow_dispatch")
        run.top = Scope(run, run.workflow, given, None, "")
        self.graph.instantiate(run.top)
        self.graph.advance(run)

    def cancel(self, run: Run) -> None:
        """The run's cancel button: queued jobs end, running steps stop (lifecycle.stop_steps),
        later steps and jobs run only if `always()` or `cancelled()`."""
        run.cancelled = True
        for inst in list(self.runners.queue):
            if inst.run is run:
                self.runners.queue.remove(inst)
                self.graph.finish(inst, "cancelled")
        stop_steps(self, run)
        self.graph.advance(run)

    def rerun_failed(self, run: Run) -> None:
        """ "Re-run failed jobs": a new attempt in which failed and cancelled jobs, and the jobs
        that depend on them, run again; the others keep their results and outputs. GitHub
        refuses it 30 days after the run started (recorded, and nothing runs)."""
        if self.now - run.created > self.limits.rerun_minutes:
            age = (self.now - run.created) / 1440
            where = run.workflow.path.name
            self.limits_hit.append(
                LimitHit("re-run window", where, f"run {run.id} is {age:.1f} days old")
            )
            return
        run.attempt += 1
        arm_deadline(self, run)
        run.cancelled = False
        run.status, run.conclusion = "in_progress", ""
        assert run.top is not None
        self.graph.reset(run.top)
        self.graph.advance(run)

    def schedules(self, *names: str) -> None:
        """Fire these workflows' (by file name; all when none is named) `on.schedule` cron lines
        on the model's clock (UTC, minute 0 is ghsim/actions/cron.EPOCH), while it is busy."""
        for wf in self.workflows():
            if names and wf.path.name not in names:
                continue
            for entry in sequence(wf.on.get("schedule")):
                arm_cron(self, wf, str(mapping(entry)["cron"]))

    def run_until_idle(self, limit_minutes: float = 60 * 24 * 60) -> None:
        """Run events up to `limit_minutes` on the clock (what is later stays scheduled)."""
        while self.clock.due(limit_minutes):
            when, action = self.clock.pop()
            self.runners.count_waiting(when)
            self.now = max(self.now, when)
            action()
        if self.clock.live:
            self.now = limit_minutes
            return
        for inst in list(self.runners.queue):
            self.hit("queue", inst, f"still queued after {self.now - inst.queued:.0f} min")

    def evict_cache(self) -> None:
        self.store.evict(self.now)


def _trigger(wf: Workflow, event: str) -> dict[str, Any] | None:
    """`on.<event>`'s settings ({} when it has none), None when the workflow has no such trigger."""
    if event not in wf.on:
        return None
    return mapping(wf.on[event]) if wf.on[event] is not None else {}


def _path_match(path: str, pattern: str) -> bool:
    """GitHub's `paths` filter: `*` within a folder, `**` across folders."""
    regex = re.escape(pattern).replace(r"\*\*", "\0").replace(r"\*", "[^/]*").replace("\0", ".*")
    return re.fullmatch(regex, path) is not None
