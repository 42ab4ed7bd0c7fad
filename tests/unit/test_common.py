"""cli/common.py: the GitHub client is built whole, its deadline and rate-limit budget given
to its constructor from --timeout and publish's --deadline-minutes."""

from __future__ import annotations

import argparse

import pytest

from wheelfarm.cli.common import client


def _args(timeout: float | None) -> argparse.Namespace:
    return argparse.Namespace(api="https://api.invalid", timeout=timeout, timeout_default=60)


def test_deadline_minutes_bound_the_command_and_its_waits_on_githubs_scaled_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WHEELFARM_GITHUB_TIME_SCALE", "4")
    github = client("octo/farm", _args(None), deadline_minutes=10)
    assert github.deadline is not None
    assert (github.deadline.seconds, github.deadline.what) == (600, "--deadline-minutes")
    assert github.budget is not None
    assert (github.budget.seconds, github.budget.what) == (150, "--deadline-minutes")
    assert github.scale == 4


def test_a_given_timeout_bounds_the_command_and_without_deadline_minutes_no_budget() -> None:
    github = client("octo/farm", _args(30), deadline_minutes=10)
    assert github.deadline is not None
    assert (github.deadline.seconds, github.deadline.what) == (30, "--timeout")
    plain = client("octo/farm", _args(None))
    assert plain.deadline is not None
    assert (plain.deadline.seconds, plain.budget) == (60, None)
