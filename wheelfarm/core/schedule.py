"""`on.schedule` cron lines as GitHub reads them (POSIX cron, five fields, UTC; docs: "Events
that trigger workflows", schedule): when a line next fires. `wheelfarm request` dates its
estimates from farm.yml's next scheduled run; the Actions model (ghsim/actions/cron.py) fires
scheduled workflows on its own clock with the same reading."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

_BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))  # minute hour day month weekday
_YEAR = timedelta(days=366)
MAX_WORKFLOW_BYTES = 1 << 20


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


def next_run(line: str, after: datetime) -> datetime:
    """The first whole minute after `after` (UTC) at which `line` fires (GitHub's cron has no
    seconds; day-of-month and weekday restricted together match either, as POSIX cron does).

    >>> next_run("41 5 * * *", datetime(2026, 12, 7, 8, 0, tzinfo=timezone.utc)).isoformat()
    '2026-12-08T05:41:00+00:00'
    """
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
    start = after.astimezone(timezone.utc).replace(second=0, microsecond=0)
    at = start + timedelta(minutes=1)
    while at <= start + _YEAR:
        day_ok = at.day in days
        weekday_ok = (at.weekday() + 1) % 7 in weekdays  # cron: 0 is Sunday
        if (
            at.month in months
            and at.hour in hours
            and at.minute in minutes
            and ((day_ok or weekday_ok) if either else (day_ok and weekday_ok))
        ):
            return at
        at += timedelta(minutes=1 if at.hour in hours else 60 - at.minute)
    msg = f"cron {line!r} never fires within a year"
    raise CronError(msg)


def workflow_cron(path: Path) -> str | None:
    """The first `on.schedule` cron line of a workflow file; None when the file is missing or
    schedules nothing (an installed wheelfarm has no .github/). Read as data (safe_load, size
    capped); YAML 1.1 reads the key `on` as True, so both spellings are looked up."""
    import yaml  # noqa: PLC0415 - only `request` reads a workflow

    try:
        if path.stat().st_size > MAX_WORKFLOW_BYTES:
            return None
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        triggers = data.get("on", data.get(True))
        line = triggers["schedule"][0]["cron"]
    except (OSError, UnicodeDecodeError, yaml.YAMLError, AttributeError, KeyError, IndexError,
            TypeError):  # fmt: skip
        return None
    return line if isinstance(line, str) else None
