"""tests/actions/cron.py: when the model fires an `on.schedule` line (POSIX cron, UTC)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ghsim.actions.cron import CronError, next_fire


def test_pages_daily_line_fires_at_04_17_each_day() -> None:
    assert next_fire("17 4 * * *", 0) == 257
    assert next_fire("17 4 * * *", 257) == 1440 + 257


def test_steps_lists_and_weekdays() -> None:
    assert next_fire("*/15 * * * *", 0) == 15
    assert next_fire("0 0,12 * * *", 1) == 720
    # the epoch, 2026-12-01, is a Tuesday: Sunday 00:00 is 5 days on
    assert next_fire("0 0 * * 0", 0) == 5 * 1440


@pytest.mark.parametrize("line", ["", "61 * * * *", "* * * *", "x * * * *", "*/0 * * * *"])
def test_a_bad_line_is_one_error_naming_it(line: str) -> None:
    with pytest.raises(CronError, match="cron"):
        next_fire(line, 0)


@given(st.text(max_size=30), st.floats(0, 1e6))
def test_any_line_fires_later_or_is_refused(line: str, after: float) -> None:
    with contextlib.suppress(CronError):
        assert next_fire(line, after) > after
