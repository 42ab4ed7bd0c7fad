"""A split compile for real (docs/adr/0011-split-compile.md): the demo extension (torch
cpp_extension with ninja) compiled as 3 shards, each in its own work folder with its own empty
ccache, then linked from their merged caches, which must serve every compile (a link that
misses fails naming the objects: tests/unit/test_shard.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.integration.conftest import wheelfarm

pytestmark = pytest.mark.integration


def test_demo_split_into_three_shards_links_from_their_caches(
    tmp_path: Path, cache_dir: Path
) -> None:
    common = ["build", "--local", "--archs", "9.0", "--cache", cache_dir, "--out", tmp_path / "out"]
    built: dict[str, int] = {}
    for i in (1, 2, 3):
        env = {**os.environ, "CCACHE_DIR": str(tmp_path / f"ccache{i}")}
        result = wheelfarm(*common, "--work", tmp_path / f"work{i}", "--shard", f"{i}/3", env=env)
        summary = json.loads(Path(result.stdout.strip().splitlines()[-1]).read_text())
        assert summary["shard"] == f"{i}/3"
        assert summary["built"] + summary["stubbed"] == 2  # binding.cpp and kernels.cu
        built[summary["shard"]] = summary["built"]
    assert sum(built.values()) == 2  # each object compiled by exactly one shard
    assert not list((tmp_path / "out").glob("*.whl"))  # a shard's wheel is a husk: never kept

    caches = [tmp_path / f"ccache{i}" for i in (1, 2, 3)]
    env = {**os.environ, "CCACHE_DIR": str(tmp_path / "ccache-link")}
    result = wheelfarm(*common, "--work", tmp_path / "work-link", "--link", *caches, env=env)
    wheel = Path(result.stdout.strip().splitlines()[-1])
    record = json.loads(wheel.with_name(wheel.name + ".build.json").read_text())
    counts = record.get("timing", record)["ccache"]
    assert counts["hits"] >= 2
    assert counts["hits"] / (counts["hits"] + counts["misses"]) >= 0.99
    assert "[7/8] verify done" in result.stderr  # the linked wheel imports
