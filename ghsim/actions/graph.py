"""The job graph of a run: jobs start when the jobs they need are done and their `if:` holds,
a matrix job becomes its instances (queued for a runner, or, for a reusable workflow, one call
each within `max-parallel`), `fail-fast` cancels a failed matrix's queued siblings, and the run
completes when nothing is left (then a `workflow_run` trigger, and the next run of its
concurrency group). "Re-run failed jobs" resets the part of the graph that runs again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ghsim.actions import contexts
from ghsim.actions.runs import (
    Instance,
    LimitError,
    LimitHit,
    Node,
    Run,
    RunStartError,
    Scope,
    aggregate,
    is_open,
    matrix_label,
    reusable,
    scopes,
    status_of,
    strategy_of,
    text,
)
from ghsim.actions.workflow import ExpressionError, mapping, sequence

if TYPE_CHECKING:
    from ghsim.actions.model import Model


class Graph:
    def __init__(self, model: Model) -> None:
        self.model = model

    def instantiate(self, scope: Scope) -> None:
        """The scope's jobs, waiting; a `needs` naming no job refuses the run."""
        jobs = scope.workflow.jobs()
        for job_id, (template, raw) in jobs.items():
            needs = [str(n) for n in template.get("needs") or []]
            missing = [n for n in needs if n not in jobs]
            if missing:
                msg = (
                    f"{scope.workflow.path.name}: job {job_id} needs {missing}, which do not exist"
                )
                raise RunStartError(msg)
            scope.nodes[job_id] = Node(scope, job_id, template, raw, needs)

    def advance(self, run: Run) -> None:
        """Start every job whose needs are done; end the run when nothing is left."""
        assert run.top is not None
        progressed = True
        while progressed:
            progressed = False
            for scope in scopes(run.top):
                for node in list(scope.nodes.values()):
                    if node.state == "waiting" and all(
                        scope.nodes[n].state == "done" for n in node.needs
                    ):
                        self.open(run, node)
                        progressed = True
                    elif (
                        node.state == "active"
                        and reusable(node)
                        and node.left == 0
                        and not node.pending
                    ):
                        self.close_call(run, node)
                        progressed = True
        if run.status == "in_progress" and all(n.state == "done" for n in run.top.nodes.values()):
            self.complete(run)

    def open(self, run: Run, node: Node) -> None:
        """A job whose needs are done: skipped by its `if:`, failed by its strategy, or its
        instances queued (or called)."""
        model = self.model
        needs = {n: node.scope.nodes[n] for n in node.needs}
        status = status_of(needs.values(), run.cancelled)
        ctx = model.contexts.context(run, node.scope, needs=needs)
        if not model.truth(node.template.get("if"), ctx, status):
            self.done(run, node, "skipped")
            return
        strategy = mapping(node.raw.get("strategy"))
        try:
            combos = model.contexts.matrix(strategy.get("matrix"), ctx)
        except LimitError as exc:
            model.limits_hit.append(LimitHit("matrix", node.name, str(exc)))
            self.done(run, node, "failure")
            return
        except ExpressionError as exc:  # GitHub fails the job: "Error when evaluating 'strategy'"
            model.notes.append(f"{node.name}: error when evaluating 'strategy': {exc}")
            self.done(run, node, "failure")
            return
        node.max_parallel = int(model.value(strategy.get("max-parallel", 0), ctx, status) or 0)
        node.fail_fast = bool(model.value(strategy.get("fail-fast", True), ctx, status))
        todo = [i for i in range(len(combos)) if i not in node.succeeded]
        node.state, node.left = "active", len(todo)
        node.results = ["success"] * (len(combos) - len(todo))
        node.pending = [Instance(node, combos[i], i, len(combos)) for i in todo]
        if reusable(node):
            self.call_next(run, node)
        else:
            for inst in node.pending:
                model.runners.enqueue(inst)
            node.pending = []
            model.at(model.now, model.runners.dispatch)

    def call_next(self, run: Run, node: Node) -> None:
        """Start the next instances of a reusable-workflow job, up to its max-parallel."""
        model = self.model
        model.runners.calling[id(node)] = node
        if run.cancelled and node.pending:
            node.results += ["cancelled"] * len(node.pending)
            node.pending = []
        while node.pending and (
            not node.max_parallel or sum(1 for c in node.calls if is_open(c)) < node.max_parallel
        ):
            inst = node.pending.pop(0)
            callee = model.workflow(str(node.template["ref"]).removeprefix("./"))
            ctx = model.contexts.context(run, node.scope, needs={n: node.scope.nodes[n] for n in node.needs},
                                         matrix=inst.matrix, strategy=strategy_of(inst))  # fmt: skip
            given = {
                k: model.value(v, ctx, {"success": True})
                for k, v in mapping(node.template.get("input-values")).items()
            }
            label = f" ({matrix_label(inst.matrix)})" if inst.matrix else ""
            scope = Scope(
                run,
                callee,
                contexts.inputs(callee, given, "workflow_call"),
                contexts.permissions(node.raw, node.scope),
                f"{node.name}{label} / ",
                caller=node,
            )
            self.instantiate(scope)
            node.calls.append(scope)
        node.left = sum(1 for c in node.calls if is_open(c)) + len(node.pending)

    def close_call(self, run: Run, node: Node) -> None:
        """A reusable-workflow job whose calls all ended: its result, and its `outputs` from the
        last call's jobs."""
        model = self.model
        model.runners.calling.pop(id(node), None)
        results = [n.result for c in node.calls for n in c.nodes.values()] + node.results
        outputs = {}
        on_call = mapping(node.calls[-1].workflow.on.get("workflow_call")) if node.calls else {}
        for key, spec in mapping(on_call.get("outputs")).items() if node.calls else ():
            jobs = {
                j: {"result": n.result, "outputs": n.outputs}
                for j, n in node.calls[-1].nodes.items()
            }
            ctx = {**model.contexts.context(run, node.calls[-1]), "jobs": jobs}
            outputs[key] = text(model.value(mapping(spec).get("value"), ctx, {"success": True}))
        node.outputs = outputs
        self.done(run, node, aggregate(results))

    def done(self, run: Run, node: Node, result: str) -> None:
        node.state, node.result = "done", result
        parent = node.scope.caller
        if parent is not None and not is_open(node.scope) and node.scope in parent.calls:
            failed = aggregate([n.result for n in node.scope.nodes.values()]) == "failure"
            if parent.fail_fast and failed:
                parent.pending = []
            self.call_next(run, parent)
        self.advance(run)

    def finish(self, inst: Instance, result: str) -> None:
        """An instance ended (or never started): its node's results, fail-fast, and the node's
        end when it was the last."""
        model = self.model
        node = inst.node
        if result == "success":
            node.succeeded.add(inst.index)
        model.job_log.append((inst.name, result, inst.started, model.now))
        node.results.append(result)
        node.left -= 1
        if result == "failure" and node.fail_fast:
            for other in [i for i in model.runners.queue if i.node is node]:
                model.runners.queue.remove(other)
                node.results.append("cancelled")
                node.left -= 1
        if node.left == 0:
            self.done(inst.run, node, aggregate(node.results))

    def complete(self, run: Run) -> None:
        """The run's conclusion; the next pending run of its group starts, and so do the
        workflows that a `workflow_run` of it triggers."""
        model = self.model
        results = [n.result for n in run.nodes if not n.calls]
        run.status, run.ended = "completed", model.now
        run.conclusion = "cancelled" if run.cancelled else aggregate(results)
        if run.group:
            waiting = [r for r in model.groups[run.group] if r.status == "pending"]
            if waiting:
                model.begin(waiting[0])
        for wf in model.workflows():
            on = wf.on.get("workflow_run")
            if on is not None and run.workflow.name in [
                str(w) for w in sequence(mapping(on).get("workflows"))
            ]:
                model.start(wf, "workflow_run", {}, "refs/heads/main")

    def reset(self, scope: Scope) -> bool:
        """Make the failed and cancelled jobs of `scope`, and their dependents, wait again;
        whether any will run."""
        again = False
        for node in list(scope.nodes.values()):
            upstream = any(scope.nodes[n].state != "done" for n in node.needs)
            if upstream and node.state == "done":  # a dependent of a job that runs again: whole
                node.state, node.result, node.results, node.outputs = "waiting", "", [], {}
                node.calls, node.succeeded = [], set()
                again = True
            elif node.calls:
                rerun = [self.reset(c) for c in node.calls]  # every call, not the first only
                if any(rerun):
                    node.state, node.result, node.results = "active", "", []
                    node.left = sum(1 for c in node.calls if is_open(c))
                    again = True
            elif node.result in {"failure", "cancelled"}:  # its failed instances only
                node.state, node.result, node.results, node.outputs = "waiting", "", [], {}
                again = True
        return again
