"""One compile per CUDA major, built for real (ADR 19): PyPI's torch 2.15.0 is the cu132 build
and this machine's nvcc is 13.0, so a torch 2.15 group compiled here is the cu130 compile serving
cu132. The demo is compiled once with 13.0 against torch 2.15.0+cu132 and loaded there; xformers'
stable-ABI group gives two verified wheels, cu130 and cu132, from one compile, and pip installs
the cu132 one by its pinned label from the served cu132 directory. torch 2.15.0 comes from PyPI
without this machine's pip cap (the torch env's own install lifts it), once per cache."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import fresh_venv, pip, serve_wheel, wheelfarm

pytestmark = pytest.mark.integration


def _group(tmp: Path, cache: Path, group_id: str, *extra: str) -> list[Path]:
    """`wheelfarm build GROUP_ID --torch-index pip --archs 9.0`: the wheels it printed."""
    result = wheelfarm(
        "build", group_id, "--torch-index", "pip", "--archs", "9.0", "--plat", "auto", *extra,
        "--out", tmp / "out", "--work", tmp / "work", "--cache", cache,
        env={**os.environ, "WHEELFARM_CACHE": str(cache)},
    )  # fmt: skip
    return [Path(line) for line in result.stdout.split() if line.endswith(".whl")]


def _record(wheel: Path) -> dict[str, object]:
    record: dict[str, object] = json.loads(wheel.with_name(wheel.name + ".build.json").read_text())
    return record


def _verify_log(wheel: Path, build_id: str) -> str:
    return (wheel.parent / "logs" / build_id / "7-verify.log").read_text(encoding="utf-8")


def test_the_demo_compiled_by_13_0_loads_into_pypis_cu132_torch(
    tmp_path: Path, cache_dir: Path
) -> None:
    (wheel,) = _group(
        tmp_path, cache_dir, "wheelfarm-demo-0.1.0-cu13torch2.15-linux_x86_64", "--pythons", "3.11"
    )
    assert wheel.name.startswith("wheelfarm_demo-0.1.0+cu132torch2.15-cp311-cp311-")
    record = _record(wheel)
    assert record["toolchain"]["cuda"].startswith("13.0.")  # type: ignore[index]
    assert record["torch"] == {"torch": "2.15.0+cu132", "cuda": "13.2"}
    assert record["compiled"] == {
        "id": "wheelfarm-demo-0.1.0-cu13torch2.15-cp311-linux_x86_64",
        "cuda": "cu130",
        "variants": ["cu130", "cu132"],
        "verified_with": None,  # its compile's own torch env
    }
    log = _verify_log(wheel, "wheelfarm-demo-0.1.0-cu132torch2.15-cp311-linux_x86_64")
    assert "import wheelfarm_demo._C" in log or "wheelfarm_demo._C" in log
    assert "symbols: 0 missing against" in log and "torch2.15.0-cu132" in log


@pytest.mark.slow
def test_one_xformers_compile_gives_a_verified_wheel_for_each_variant(
    tmp_path: Path, cache_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The stable-ABI group: one compile (against this machine's cu130 torch 2.14.1), relabelled
    into cu130's and cu132's wheels, each verified in its own variant's torch env."""
    wheels = _group(
        tmp_path, cache_dir, "xformers-0.0.35-cu13torch2.10.stable-py39-none-linux_x86_64"
    )
    by_cuda = {_record(w)["target"]["cuda"]: w for w in wheels}  # type: ignore[index]
    assert sorted(by_cuda) == ["cu130", "cu132"]
    cu130, cu132 = _record(by_cuda["cu130"]), _record(by_cuda["cu132"])
    assert cu130["compiled"]["id"] == cu132["compiled"]["id"]  # type: ignore[index]
    assert cu130["compiled"]["cuda"] == cu132["compiled"]["cuda"] == "cu130"  # type: ignore[index]
    assert cu132["compiled"]["verified_with"]["torch"] == "2.15.0+cu132"  # type: ignore[index]
    assert by_cuda["cu132"].name.startswith("xformers-0.0.35+cu132torch2.12.stable-py39-none-")
    # pip installs the cu132 wheel by its pinned label from the served cu132 directory
    with serve_wheel(by_cuda["cu132"], tmp_path_factory) as (_, url):
        torch_env = next((cache_dir / "envs").glob("torch2.15.0-cu132-cp311-*[0-9a-f]"))
        py = fresh_venv(tmp_path / "venv", torch_env)
        result = pip(
            py, "install", "xformers==0.0.35+cu132torch2.12.stable",
            "--extra-index-url", f"{url}cu132/torch2.15/",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    check = "import torch, xformers.ops; print(torch.__version__, torch.ops.xformers._nvcc_build_version())"
    out = subprocess.run([py, "-c", check], capture_output=True, text=True, check=True).stdout
    assert out.startswith("2.15.0+cu132 (13, 0,"), out  # nvcc 13.0's binary in torch cu132
