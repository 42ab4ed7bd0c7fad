"""Tests of what core_platforms does (filed by module: tests/README.md)."""

from __future__ import annotations

import pytest

from tests.unit.helpers.roots import FACTS, MATRIX, TABLE
from wheelfarm.core.platforms import os_of
from wheelfarm.matrix.toolkits import unpinned


@pytest.mark.parametrize("tag", sorted(TABLE.toolkits))
def test_each_toolkit_gets_a_host_compiler_its_nvcc_accepts(tag: str) -> None:
    tk = TABLE.toolkits[tag]
    host = FACTS.cuda[tk.minor]
    assert tk.gcc_toolset is not None and tk.gcc_toolset <= host.gcc_max
    for name, info in MATRIX.farm.platforms.items():
        if os_of(name) == "linux":
            assert tk.gcc_toolset in FACTS.images[unpinned(info.container)].gcc_toolsets
        elif tk.msvc_toolset is not None:
            msc = FACTS.runners[info.runner].msvc[tk.msvc_toolset]
            assert host.msvc[0] <= msc < host.msvc[1], (tag, tk.msvc_toolset, host.msvc)
