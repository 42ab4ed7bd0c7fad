"""A run's life as GitHub documents it beyond its jobs (ADR 13, issue 35): the 35-day run
limit, cancellation that stops running steps, and `on.schedule` on the model's clock. Functions
of the `Model`, kept apart from its job graph."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from ghsim.actions.cron import next_fire
from ghsim.actions.runs import LimitHit

if TYPE_CHECKING:
    from ghsim.actions.model import Model, Run
    from ghsim.actions.workflow import Workflow


def arm_deadline(model: Model, run: Run) -> None:
    """GitHub cancels a run (this attempt) 35 days after it started, waiting included
    (docs: "Actions limits", workflow run time)."""
    attempt = run.attempt

    def expire() -> None:
        if run.attempt != attempt or run.status == "completed":
            return
        where = run.workflow.path.name
        model.limits_hit.append(LimitHit("workflow run time", where, f"run {run.id} at 35 days"))
        if run.status == "in_progress":
            model.cancel(run)
        else:
            run.status, run.conclusion = "completed", "cancelled"

    model.at(model.now + model.limits.run_minutes, expire, timer=True)


def stop_steps(model: Model, run: Run) -> None:
    """A cancelled run's running jobs (docs: "Workflow cancellation reference"): a running step
    whose `if:`, re-evaluated, is false gets SIGINT, then SIGTERM 7,500 ms later (the model ends
    it then: a build is not assumed to stop on SIGINT); a job still running 5 minutes after the
    cancel is force-terminated."""
    sigterm = model.now + model.limits.sigterm_minutes
    for inst in [i for i in model.runners.active if i.run is run]:
        inst.cancelled = True
        step = (inst.node.template.get("steps") or [])[inst.step - 1] if inst.step else {}
        status, ctx = model.steps.state(run, inst)
        if inst.step_ends > sigterm and not model.truth(step.get("if"), ctx, status):
            inst.steps[inst.step_id] = {"outputs": {}, "outcome": "cancelled",
                                        "conclusion": "cancelled"}  # fmt: skip
            model.clock.wake(inst, sigterm, functools.partial(model.steps.step, inst))

    def terminate() -> None:
        for inst in [i for i in model.runners.active if i.run is run]:
            model.hit("cancelled job terminated", inst, "still running 5 min after the cancel")
            inst.wake += 1
            model.steps.end_job(inst)

    model.at(model.now + model.limits.force_minutes, terminate, timer=True)


def arm_cron(model: Model, wf: Workflow, line: str) -> None:
    """Start `wf` on the schedule `line` (UTC) at its next minute on the model's clock."""

    def fire() -> None:
        model.start(wf, "schedule", {}, model.default_branch)
        arm_cron(model, wf, line)

    model.at(next_fire(line, model.now), fire, timer=True)
