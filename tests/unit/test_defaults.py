"""Defaults that agree (issue 38): build, farm, index and serve share one wheelhouse and one
site; the site's lock is no untracked file of the checkout; a yanked sdist is refused with its
reason unless the package file allows it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.builder.source import pick_sdist
from wheelfarm.cli import _parser, common, main
from wheelfarm.core.errors import BuildError, UsageError
from wheelfarm.core.simple import IndexFile, parse_html, parse_json
from wheelfarm.index.lock import lock_path

PAGE = "https://pypi.org/simple/pkg/"
SDIST = "https://files.example/pkg-1.0.tar.gz"


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


def test_a_yanked_sdist_is_refused_with_its_reason() -> None:
    files = [IndexFile("pkg-1.0.tar.gz", SDIST, yanked=True, yank_reason="broken CUDA 12 build")]
    with pytest.raises(BuildError, match=r"yanked on .*: broken CUDA 12 build; .*allow_yanked"):
        pick_sdist(files, "pkg", "1.0", PAGE, allow_yanked=False)


def test_allow_yanked_builds_it_and_says_why(caplog: pytest.LogCaptureFixture) -> None:
    files = [IndexFile("pkg-1.0.tar.gz", SDIST, yanked=True)]
    with caplog.at_level(logging.WARNING):
        assert pick_sdist(files, "pkg", "1.0", PAGE, allow_yanked=True) == SDIST
    assert "pkg-1.0.tar.gz is yanked on" in caplog.text and "no reason given" in caplog.text
    plain = [IndexFile("pkg-1.0.tar.gz", SDIST)]
    assert pick_sdist(plain, "pkg", "1.0", PAGE, allow_yanked=False) == SDIST


def test_both_page_formats_carry_the_yank_reason() -> None:
    html = f'<a href="{SDIST}" data-yanked="bad metadata">pkg-1.0.tar.gz</a>'
    (from_html,) = parse_html(html, PAGE)
    entry = {"filename": "pkg-1.0.tar.gz", "url": SDIST, "hashes": {}, "yanked": "bad metadata"}
    (from_json,) = parse_json({"files": [entry]}, PAGE)
    assert from_html.yank_reason == from_json.yank_reason == "bad metadata"
    assert from_html.yanked and from_json.yanked
