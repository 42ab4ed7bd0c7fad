"""Tests of what toolkits does (filed by module: tests/README.md)."""

from __future__ import annotations

import re

import pytest
from packaging.version import Version

from tests.roots import REPO
from tests.unit.helpers.roots import MATRIX, TABLE
from wheelfarm.core.platforms import NAMES, os_of
from wheelfarm.matrix.toolkits import support, toolkit


@pytest.mark.parametrize("tag", sorted(TABLE.toolkits))
def test_every_platform_installs_the_same_exact_toolkit(tag: str) -> None:
    facts = [toolkit(REPO, tag, platform) for platform in NAMES]
    assert {f["version"] for f in facts} == {str(TABLE.toolkits[tag].version)}
    assert len({f["components"] for f in facts}) == 1
    assert len({f["manifest"] for f in facts}) == 1
    assert Version(facts[0]["version"]).release[2:] != ()  # a full release, never "13.x"


def test_toolkit_facts_for_the_runner_scripts() -> None:
    linux = toolkit(REPO, "cu130", "linux_aarch64")
    assert linux["redist_platform"] == "linux-sbsa"
    assert linux["gcc_toolset"] == "14"
    assert linux["manifest"].endswith("/redistrib_13.0.2.json")
    windows = toolkit(REPO, "cu118", "win_amd64")
    assert windows["msvc_toolset"] == "14.29" and "gcc_toolset" not in windows
    assert windows["redist_platform"] == "windows-x86_64"


def test_the_shipped_farm_is_consistent_and_pinned() -> None:
    assert support(MATRIX).table is TABLE  # no ConfigError
    for name, info in MATRIX.farm.platforms.items():
        if os_of(name) == "linux":
            assert re.search(r"@sha256:[0-9a-f]{64}$", info.container), name
