"""cli/common.py: the flags every command shares, the one site and wheelhouse, and the GitHub
client built whole (its deadline and rate-limit budget given to its constructor)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.cli import _parser, common, main
from wheelfarm.cli.common import client
from wheelfarm.core.errors import UsageError
from wheelfarm.index.lock import lock_path


def test_build_farm_index_and_serve_share_one_wheelhouse_and_one_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    parse = _parser().parse_args
    assert parse(["build", "--local"]).out == common.WHEELHOUSE
    farm = parse(["farm"])
    assert (farm.store, farm.site) == (common.WHEELHOUSE, common.SITE)
    assert parse(["index"]).out == common.SITE
    assert parse(["serve"]).dir == common.SITE
    monkeypatch.chdir(tmp_path)  # no wheelhouse here: index names the one it read by default
    assert main(["index", "--root", str(REPO.path)]) == UsageError.exit_code
    assert f"--wheelhouse '{common.WHEELHOUSE}': no such folder" in capsys.readouterr().err


def test_the_default_sites_lock_is_ignored_by_git() -> None:
    ignored = (REPO.path / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert f"/{lock_path(common.SITE).as_posix()}" in ignored
    assert f"/{common.WHEELHOUSE.as_posix()}/" in ignored


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
