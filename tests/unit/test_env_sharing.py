"""A new torch environment hard-links its big files to byte-identical ones of the cache's finished
envs (a group job's Pythons share the nvidia-* libraries; CI's two CPython 3.11 share all of
torch), and never a file whose bytes differ."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wheelfarm.builder import envs

MIB = 1 << 20


def _env(root: Path, python: str, files: dict[str, bytes]) -> Path:
    site = root / "lib" / python / "site-packages"
    for name, data in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
    return root


def test_identical_big_files_become_links_and_different_ones_stay(tmp_path: Path) -> None:
    lib, other = b"a" * (2 * MIB), b"b" * (2 * MIB)
    first = _env(tmp_path / "cp311", "python3.11",
                 {"nvidia/cublas/lib/libcublas.so": lib, "torch/lib/libtorch.so": lib,
                  "torch/version.py": b"v"})  # fmt: skip
    new = _env(tmp_path / "cp312", "python3.12",
               {"nvidia/cublas/lib/libcublas.so": lib, "torch/lib/libtorch.so": other,
                "torch/version.py": b"v", "nvidia/only-here.so": lib})  # fmt: skip
    assert envs.share_files(new, [first]) == 2 * MIB
    site, old_site = new / "lib/python3.12/site-packages", first / "lib/python3.11/site-packages"
    cublas = site / "nvidia/cublas/lib/libcublas.so"
    assert cublas.stat().st_ino == (old_site / "nvidia/cublas/lib/libcublas.so").stat().st_ino
    assert cublas.read_bytes() == lib
    assert (site / "torch/lib/libtorch.so").read_bytes() == other  # same size, other bytes
    assert (site / "torch/lib/libtorch.so").stat().st_nlink == 1
    assert (site / "torch/version.py").stat().st_nlink == 1  # too small to be worth it
    assert (site / "nvidia/only-here.so").stat().st_nlink == 1  # same bytes, another place
    assert not list(site.rglob("*.wheelfarm-link"))
    assert envs.share_files(new, [first]) == 0  # already one inode


def test_a_file_system_without_hard_links_keeps_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = b"c" * (2 * MIB)
    first = _env(tmp_path / "a", "python3.11", {"nvidia/lib.so": lib})
    new = _env(tmp_path / "b", "python3.11", {"nvidia/lib.so": lib})

    def refuse(src: object, dst: object) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", refuse)
    assert envs.share_files(new, [first]) == 0
    assert (new / "lib/python3.11/site-packages/nvidia/lib.so").read_bytes() == lib
    assert not list(new.rglob("*.wheelfarm-link"))
