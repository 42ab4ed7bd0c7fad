"""The matrix and expansion kept between processes (matrix/gridcache.py): read back while the
farm root's files are unchanged, made again when any changes, torn files remade, and rebound to
the checkout that asks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.helpers.roots import package_yaml
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix import gridcache
from wheelfarm.matrix.gridcache import GRID_CACHE, cached_grid, grid_from_env, matrix_from_env


def _unloadable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any load from here on fails the test: the answer must come from the cache."""

    def refuse(*args: Any) -> Any:
        msg = f"loaded the matrix again: {args!r}"
        raise AssertionError(msg)

    monkeypatch.setattr(gridcache, "load_matrix", refuse)


def test_an_unchanged_root_is_read_back_without_loading(
    matrix_dir: Callable[..., FarmRoot], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = matrix_dir({"demo-pkg": package_yaml()})
    cache = tmp_path / "cache"
    matrix, expansion = cached_grid(root, cache)
    assert len(list(cache.glob("grid-*.pickle"))) == 1 and expansion.builds
    _unloadable(monkeypatch)
    again, held = cached_grid(root, cache)
    assert held.builds == expansion.builds and again == matrix


def test_a_changed_matrix_file_is_never_answered_from_the_old_expansion(
    matrix_dir: Callable[..., FarmRoot], tmp_path: Path
) -> None:
    root = matrix_dir({"demo-pkg": package_yaml()})
    cache = tmp_path / "cache"
    _, before = cached_grid(root, cache)
    package = root.packages / "demo-pkg.yaml"
    package.write_text(package_yaml(extra="build_minutes_per_arch: 7\n"), encoding="utf-8")
    _, after = cached_grid(root, cache)
    assert {b.id for b in after.builds} == {b.id for b in before.builds}
    assert [b.minutes for b in after.builds] != [b.minutes for b in before.builds]
    assert len(list(cache.glob("grid-*.pickle"))) == 1  # the stale one is gone


def test_a_torn_cache_file_is_made_again(
    matrix_dir: Callable[..., FarmRoot], tmp_path: Path
) -> None:
    root = matrix_dir({"demo-pkg": package_yaml()})
    cache = tmp_path / "cache"
    _, whole = cached_grid(root, cache)
    (held,) = cache.glob("grid-*.pickle")
    held.write_bytes(held.read_bytes()[:100])
    _, again = cached_grid(root, cache)
    assert again.builds == whole.builds


def test_another_checkout_of_the_same_matrix_gets_its_own_paths(
    matrix_dir: Callable[..., FarmRoot], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job's workspace links the repository's matrix/; the first job's workspace is gone
    when a later one reads the cache, so the matrix it gets names the later one's files."""
    root = matrix_dir({"demo-pkg": package_yaml()})
    cache = tmp_path / "cache"
    cached_grid(root, cache)
    job = FarmRoot(tmp_path / "job")
    job.path.mkdir()
    job.matrix.symlink_to(root.matrix)
    _unloadable(monkeypatch)
    matrix, _ = cached_grid(job, cache)
    assert matrix.root == job
    assert [p.file for p in matrix.packages] == [job.packages / "demo-pkg.yaml"]


def test_no_cache_unless_the_environment_names_a_folder(
    matrix_dir: Callable[..., FarmRoot], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = matrix_dir({"demo-pkg": package_yaml()})
    monkeypatch.delenv(GRID_CACHE, raising=False)
    grid_from_env(root)
    assert not list(tmp_path.rglob("grid-*.pickle"))
    monkeypatch.setenv(GRID_CACHE, str(tmp_path / "cache"))
    grid_from_env(root)
    assert len(list((tmp_path / "cache").glob("grid-*.pickle"))) == 1


def test_the_matrix_alone_leaves_the_expansion_unread(
    matrix_dir: Callable[..., FarmRoot], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`wheelfarm shard` needs the matrix only: it stops after the file's first pickle (a torn
    expansion after it does not matter to it), and loads nothing."""
    root = matrix_dir({"demo-pkg": package_yaml()})
    cache = tmp_path / "cache"
    matrix, _ = cached_grid(root, cache)
    (held,) = cache.glob("grid-*.pickle")
    held.write_bytes(held.read_bytes()[:-50])
    monkeypatch.setenv(GRID_CACHE, str(cache))
    _unloadable(monkeypatch)
    assert matrix_from_env(root) == matrix
