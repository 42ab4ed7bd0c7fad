"""Queue and clock: the model's simulated minutes, the events scheduled on them, and the
account's runners (20 concurrent jobs on the Free plan): the queue of jobs waiting for one, the
24 h queue limit, `max-parallel`, and the busy runners while jobs wait (ADR 17's measure of how
well the farm fills its pool). Timers (deadlines, schedules) fire only while real work keeps the
model busy, so an idle model stops."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

from ghsim.actions.runs import Instance, Node

if TYPE_CHECKING:
    from ghsim.actions.model import Model


class Clock:
    def __init__(self) -> None:
        self.now = 0.0  # simulated minutes
        self.events: list[tuple[float, int, Callable[[], None], bool]] = []
        self.live = 0  # events that are not timers: the model is idle when none is left
        self._seq = itertools.count()

    def at(self, minutes: float, action: Callable[[], None], *, timer: bool = False) -> None:
        """Schedule `action`; a timer (a deadline, a schedule) fires only while something else
        keeps the model busy, so an idle model stops."""
        heapq.heappush(self.events, (minutes, next(self._seq), action, timer))
        self.live += not timer

    def wake(self, inst: Instance, minutes: float, action: Callable[[], None]) -> None:
        """Continue a job at `minutes`, voiding what was scheduled for it before (a kill)."""
        inst.wake += 1
        wake = inst.wake
        self.at(minutes, lambda: action() if inst.wake == wake else None)

    def due(self, limit: float) -> bool:
        """Whether real work is left and its next event is at `limit` or before."""
        return bool(self.live) and self.events[0][0] <= limit

    def pop(self) -> tuple[float, Callable[[], None]]:
        when, _, action, timer = heapq.heappop(self.events)
        self.live -= not timer
        return when, action


class Runners:
    """The account's runners and the jobs waiting for one, in the order they were queued."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.queue: list[Instance] = []
        self.busy = 0
        self.peak = 0  # the most jobs on runners at once
        self.active: list[Instance] = []  # jobs on a runner
        self.runner_minutes = 0.0
        # runners busy while some job waits (queued, held by max-parallel, or a reusable
        # workflow's call not yet started): their minutes, and the busy-runner minutes
        self.waiting_minutes = 0.0
        self.waiting_busy_minutes = 0.0
        self.calling: dict[int, Node] = {}  # reusable-workflow jobs, by id, while open

    def enqueue(self, inst: Instance) -> None:
        inst.queued = self.model.now
        self.queue.append(inst)

    def dispatch(self) -> None:
        """Put queued jobs on free runners, oldest first, within each job's max-parallel; a job
        queued past the 24 h limit is cancelled."""
        model = self.model
        for inst in list(self.queue):
            if self.busy >= model.limits.runners:
                return
            node = inst.node
            if node.max_parallel and node.running >= node.max_parallel:
                inst.queued = model.now  # held back by max-parallel: not yet waiting for a runner
                continue
            self.queue.remove(inst)
            if model.now - inst.queued > model.limits.queue_minutes:
                model.hit("queue", inst, f"queued {model.now - inst.queued:.0f} min")
                model.graph.finish(inst, "cancelled")
                continue
            self.busy += 1
            self.peak = max(self.peak, self.busy)
            node.running += 1
            self.active.append(inst)
            model.steps.start_job(inst)

    def release(self, inst: Instance) -> None:
        """The job's runner is free again."""
        self.busy -= 1
        inst.node.running -= 1
        self.active.remove(inst)
        self.runner_minutes += self.model.now - inst.started

    def count_waiting(self, until: float) -> None:
        """Add the busy runners up to `until` while anything waits to start."""
        now = self.model.now
        if until > now and (self.queue or any(n.pending for n in self.calling.values())):
            self.waiting_minutes += until - now
            self.waiting_busy_minutes += (until - now) * self.busy

    @property
    def busy_while_waiting(self) -> float:
        """The mean of busy runners while some job waited (0 when none ever did)."""
        return self.waiting_busy_minutes / self.waiting_minutes if self.waiting_minutes else 0.0
