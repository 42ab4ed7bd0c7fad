"""`on.schedule` cron lines as GitHub reads them (POSIX cron, five fields, UTC; docs: "Events
that trigger workflows", schedule): the next minute a line fires after a moment of the model's
clock, so the model can fire pages.yml's daily run on its own clock."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

EPOCH = datetime(2026, 12, 1, tzinfo=timezone.utc)  # the model's minute 0
_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))  # minute hour day month weekday
_YEAR = 366 * 24 * 60


class CronError(ValueError):
    """A schedule line GitHub's parser would refuse."""


def _field(text: str, low: int, high: int) -> set[int]:
    values: set[int] = set()
    for part in text.split(","):
        span, _, step = part.partition("/")
        if span == "*":
            first, last = low, high
        elif "-" in span:
            a, b = span.split("-", 1)
            first, last = int(a), int(b)
        else:
            first = last = int(span)
            if step:
                last = high
        if not (low <= first <= last <= high) or (step and int(step) < 1):
            msg = f"cron field {text!r}: outside {low}-{high}; use numbers in range"
            raise CronError(msg)
        values.update(range(first, last + 1, int(step) if step else 1))
    return values


def next_fire(line: str, after: float) -> float:
    """The first model minute after `after` at which `line` fires (GitHub's cron has no seconds;
    day-of-month and weekday restricted together match either, as POSIX cron does)."""
    fields = line.split()
    if len(fields) != len(_BOUNDS):
        msg = f"cron {line!r}: five fields (minute hour day month weekday) expected"
        raise CronError(msg)
    try:
        sets = [_field(f, lo, hi) for f, (lo, hi) in zip(fields, _BOUNDS, strict=True)]
    except ValueError as exc:
        msg = f"cron {line!r}: {exc}; use numbers, '*', ranges, lists and steps"
        raise CronError(msg) from exc
    minutes, hours, days, months, weekdays = sets
    either = fields[2] != "*" and fields[4] != "*"
    minute = int(after) + 1
    while minute <= after + _YEAR:
        at = EPOCH + timedelta(minutes=minute)
        day_ok = at.day in days
        weekday_ok = (at.weekday() + 1) % 7 in weekdays  # cron: 0 is Sunday
        if (
            at.month in months
            and at.hour in hours
            and at.minute in minutes
            and ((day_ok or weekday_ok) if either else (day_ok and weekday_ok))
        ):
            return float(minute)
        minute += 1 if at.hour in hours else 60 - at.minute
    msg = f"cron {line!r} never fires within a year"
    raise CronError(msg)
