"""builder/source.py: a submodule-heavy git source checks out only the submodules its build
needs; the builder, which trusts no Source it did not load, refuses a hostile submodule path
before anything is fetched."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from wheelfarm.builder.source import fetch
from wheelfarm.core.errors import BuildError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.model import PackageVersion, Source


@pytest.mark.parametrize("sub", ["../outside", "/abs", "C:\\x", "a\nb", ""])
def test_a_hostile_submodule_path_is_refused_before_any_fetch(sub: str, tmp_path: Path) -> None:
    source = Source(git="https://github.com/o/r", commit="0" * 40, submodules=("csrc/x", sub))
    version = PackageVersion(version=Version("1.0"), source=source)
    with pytest.raises(BuildError, match=r"pkg: source submodule .* give a folder inside") as info:
        fetch(
            "pkg",
            version,
            tmp_path / "work",
            root=FarmRoot(tmp_path / "farm"),
            cache=tmp_path,
            sdist_index="",
            log=tmp_path / "log",
        )
    assert repr(sub) in str(info.value)
    assert not (tmp_path / "work").exists()
