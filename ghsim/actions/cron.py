"""`on.schedule` cron lines on the model's clock: the next model minute a line fires after a
moment, so the model can fire pages.yml's daily run on its own clock. The reading of a line is
the farm's own (wheelfarm/core/schedule.py), which `wheelfarm request` dates its estimates by."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from wheelfarm.core.schedule import CronError, next_run

EPOCH = datetime(2026, 12, 1, tzinfo=timezone.utc)  # the model's minute 0

__all__ = ["EPOCH", "CronError", "next_fire"]


def next_fire(line: str, after: float) -> float:
    """The first model minute after `after` at which `line` fires."""
    at = next_run(line, EPOCH + timedelta(minutes=after))
    return (at - EPOCH).total_seconds() / 60
