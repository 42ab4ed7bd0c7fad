"""The record the builder writes: composed from its own objects, in wheelfarm.core.record's
layout (which the schema describes), read back the same; and the shard/wheel split of
run_build."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
from jsonschema import Draft202012Validator
from packaging.version import Version

from tests.roots import REPO
from wheelfarm.builder import envs, provenance, toolchain
from wheelfarm.builder.build import BuildOptions, run_build, run_shard
from wheelfarm.builder.shard import Split
from wheelfarm.builder.target import resolve
from wheelfarm.builder.verify import Report
from wheelfarm.core import record
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

ID = "flash-attn-2.8.3.post2-cu130torch2.14-cp312-linux_x86_64"
SCHEMA = json.loads((REPO.schemas / "build-record.schema.json").read_text())


def test_the_built_record_follows_the_schema_and_reads_back(tmp_path: Path) -> None:
    matrix = load_matrix(REPO)
    target = resolve(matrix, expand(matrix), ID)
    wheel = tmp_path / "flash_attn-2.8.3.post2+cu130torch2.14-cp312-cp312-linux_x86_64.whl"
    wheel.write_bytes(b"wheel")
    torch_env = envs.TorchEnv(tmp_path / "torch", "2.14.0", "cu130")
    torch_env.path.mkdir()
    (torch_env.path / ".complete").write_text('{"torch": "2.14.0+cu130", "cuda": "13.0"}')
    work = tmp_path / "work"
    made = provenance.build_record(
        wheel,
        target,
        tc=toolchain.Toolchain(tmp_path, tmp_path / "nvcc", Version("13.0.88"), "gcc 13"),
        report=Report(archs={"flash_attn_2_cuda.so": {"cubins": ["sm_80"], "ptx": []}}),
        env={"MAX_JOBS": "2", "CCACHE_BASEDIR": str(work)},
        work=work,
        torch_env=torch_env,
        options=record.RecordedOptions(torch_index="t", sdist_index="s", plat="p"),
        timing=record.Timing(created="now", steps_seconds={"compile": 1.0}, ccache={}),
    )
    assert made.target.covers and made.target.archs == target.build.archs.torch
    assert made.environment["CCACHE_BASEDIR"] == "<work>"
    assert made.torch == record.TorchFacts(torch="2.14.0+cu130", cuda="13.0")
    assert made.wheel.size == 5
    Draft202012Validator(SCHEMA).validate(made.to_object())
    assert record.BuildRecord.from_json(made.to_json(), what="r") == made


def test_a_torch_marker_of_no_shape_is_one_line(tmp_path: Path) -> None:
    torch_env = envs.TorchEnv(tmp_path, "2.14.0", "cu130")
    (tmp_path / ".complete").write_text('{"torch": "2.14.0", "cuda": null}')
    with pytest.raises(record.RecordError, match=r"\.complete: cuda should be a string, not null"):
        provenance.torch_facts(torch_env)


def test_a_compile_shard_runs_as_run_shard_and_a_wheel_as_run_build(tmp_path: Path) -> None:
    """Neither starts a step with the other's options (the target is never reached)."""
    nothing = cast("Any", None)
    opts = BuildOptions(out_dir=tmp_path, work_dir=tmp_path, cache=tmp_path)
    shard = BuildOptions(out_dir=tmp_path, work_dir=tmp_path, cache=tmp_path, split=Split(1, 2))
    with pytest.raises(ValueError, match="a compile shard makes no wheel: run_shard builds it"):
        run_build(nothing, shard)
    with pytest.raises(ValueError, match="run_shard builds a compile shard"):
        run_shard(nothing, opts)
