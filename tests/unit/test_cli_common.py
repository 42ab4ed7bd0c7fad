"""Tests of what cli_common does (filed by module: tests/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.cli import _parser, common, main
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
