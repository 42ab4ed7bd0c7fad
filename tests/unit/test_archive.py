"""Tests of what archive does (filed by module: tests/README.md)."""

from __future__ import annotations

import io
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.unit.helpers.wheels import _member, _tar
from wheelfarm.builder.source import _extract
from wheelfarm.core.archive import Limits, MiB
from wheelfarm.core.errors import BuildError


class _Zeros(io.RawIOBase):
    """`size` zero bytes, read without holding them in memory."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def test_tar_bomb_200kb_to_200mb_is_refused_at_its_header(tmp_path: Path) -> None:
    archive = tmp_path / "pkg-1.0.tar.gz"
    info = _member("pkg/zeros")
    info.size = 200 * MiB
    with tarfile.open(archive, "w:gz") as tf:
        tf.addfile(info, _Zeros(info.size))
    assert archive.stat().st_size < 250_000
    with pytest.raises(
        BuildError, match=r"unpacks to more than 67108864 bytes from \d+ \(at 'pkg/zeros'\)"
    ):
        _extract(archive, tmp_path / "src")
    assert sum(p.stat().st_size for p in (tmp_path / "src").rglob("*")) == 0


def test_zip_bomb_300kb_to_300mb_is_refused_before_it_is_read(tmp_path: Path) -> None:
    archive = tmp_path / "pkg-1.0.zip"
    with (
        zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf,
        zf.open("pkg/zeros", "w", force_zip64=True) as out,
    ):
        shutil.copyfileobj(_Zeros(300 * MiB), out, MiB)
    assert archive.stat().st_size < 350_000
    with pytest.raises(BuildError, match="refused as a decompression bomb"):
        _extract(archive, tmp_path / "src")


def test_member_count_and_size_limits_by_parameter(tmp_path: Path) -> None:
    many = [(_member(f"pkg/f{i}"), b"") for i in range(11)]
    with pytest.raises(BuildError, match=r"more than 10 members \(at 'pkg/f10'\)"):
        _extract(_tar(tmp_path / "a.tar.gz", *many), tmp_path / "a", Limits(max_members=10))
    small = Limits(max_bytes=1000, ratio_floor=0)
    with pytest.raises(BuildError, match="unpacks to more than 1000 bytes"):
        _extract(
            _tar(tmp_path / "b.tar.gz", (_member("pkg/x"), b"y" * 1001)), tmp_path / "b", small
        )


def test_a_long_name_header_counts_against_the_stream_cap(tmp_path: Path) -> None:
    """tarfile reads a PAX header whole, before the member is seen: the stream is capped."""
    info = _member("pkg/" + "n" * 200_000)
    archive = _tar(tmp_path / "pkg-1.0.tar.gz", (info, b""))
    limits = Limits(max_bytes=10_000, max_members=10, ratio_floor=0)
    with pytest.raises(BuildError, match="unpacks to more than 20240 bytes, headers included"):
        _extract(archive, tmp_path / "src", limits)
