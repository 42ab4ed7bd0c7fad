"""`wheelfarm doctor` makes each of its seven checks fail on purpose, on this machine: real torch
and real wheels (the demo the farm built, relabelled where a check needs another label); the GPU
and driver, which this machine lacks, come from a stand-in `nvidia-smi` first on PATH."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import DRIPPING, SLACK, TIMEOUT, _server
from wheelfarm.core.wheelfile import dist_info, read_files, write_wheel
from wheelfarm.doctor import read_wheel
from wheelfarm.doctor_import import decode

from .conftest import DemoBuild, fresh_venv, retag, wheelfarm

pytestmark = pytest.mark.integration
CP = f"cp{sys.version_info[0]}{sys.version_info[1]}"


def smi(tmp_path: Path, answer: str) -> dict[str, str]:
    """An environment whose nvidia-smi reports `answer` ('compute_cap, driver_version')."""
    bin_dir = tmp_path / "smi"
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\necho '{answer}'\n")
    tool.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def doctor(
    target: Path | str, python: Path, env: dict[str, str], *extra: str | Path
) -> tuple[int, dict[str, str]]:
    result = wheelfarm("doctor", target, "--python", python, *extra, env=env, check=False)
    lines = {
        line.split()[1]: line
        for line in result.stdout.splitlines()
        if line.startswith(("pass", "FAIL"))
    }
    return result.returncode, lines


@pytest.fixture(scope="module")
def venv(demo_build: DemoBuild, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fresh_venv(tmp_path_factory.mktemp("doctor") / "venv", demo_build.torch_env)


def with_platform(wheel: Path, dest: Path, platform: str) -> Path:
    """The same wheel under another platform tag (file name and WHEEL)."""
    files = read_files(wheel)
    info = dist_info(list(files))
    wheel_lines = files[f"{info}/WHEEL"].decode().splitlines()
    tag_line = next(line for line in wheel_lines if line.startswith("Tag:"))
    old = tag_line.split("-")[-1]
    files[f"{info}/WHEEL"] = files[f"{info}/WHEEL"].replace(old.encode(), platform.encode())
    out = dest / wheel.name.replace(old, platform)
    write_wheel(out, files, info)
    return out


def test_all_seven_pass_for_the_right_wheel(
    demo_build: DemoBuild, venv: Path, tmp_path: Path
) -> None:
    code, lines = doctor(demo_build.wheel, venv, smi(tmp_path, "9.0, 580.82.07"))
    assert code == 0, lines
    assert set(lines) == {"python", "platform", "torch", "cuda", "gpu", "driver", "import"}
    assert all(line.startswith("pass") for line in lines.values())


def test_gpu_and_driver_fail_with_the_reason_and_the_fix(
    demo_build: DemoBuild, venv: Path, tmp_path: Path
) -> None:
    """Demo wheel: SASS sm_80, sm_90 and PTX 9.0; a 7.5 GPU can run none of it, and driver 535
    is older than CUDA 13's 580.65.06."""
    code, lines = doctor(demo_build.wheel, venv, smi(tmp_path, "7.5, 535.104.05"))
    assert code == 1
    assert lines["gpu"].startswith("FAIL") and "compute capability 7.5" in lines["gpu"]
    assert "sm_80: 8.0-8.x, sm_90: 9.0-9.x, PTX sm_90: 9.0 and newer (JIT)" in lines["gpu"]
    assert lines["driver"].startswith("FAIL") and "driver >= 580.65.06" in lines["driver"]
    assert all(lines[c].startswith("pass") for c in ("python", "platform", "torch", "cuda"))
    code, lines = doctor(demo_build.wheel, venv, smi(tmp_path, "8.6, 580.82.07"))
    assert code == 0  # sm_80 SASS runs on 8.6


@pytest.mark.parametrize(
    ("label", "python", "failing"),
    [
        ("cu130torch2.14", "cp399", "python"),
        ("cu130torch2.13", CP, "torch"),
        ("cu126torch2.14", CP, "cuda"),
    ],
)
def test_a_wheel_for_another_cell_fails_its_check(
    demo_build: DemoBuild, venv: Path, tmp_path: Path, label: str, python: str, failing: str
) -> None:
    other = retag(demo_build.wheel, tmp_path, label=label, python=python)
    code, lines = doctor(other, venv, smi(tmp_path, "9.0, 580.82.07"))
    assert code == 1
    assert lines[failing].startswith("FAIL")
    passing = {"python", "torch", "cuda", "gpu", "driver"} - {failing}
    assert all(lines[c].startswith("pass") for c in passing), lines


def test_a_glibc_floor_above_this_system_fails_platform(
    demo_build: DemoBuild, venv: Path, tmp_path: Path
) -> None:
    future = with_platform(demo_build.wheel, tmp_path, "manylinux_2_99_x86_64")
    code, lines = doctor(future, venv, smi(tmp_path, "9.0, 580.82.07"))
    assert (
        code == 1 and lines["platform"].startswith("FAIL") and "glibc >= 2.99" in lines["platform"]
    )


def test_an_import_without_torch_fails_and_names_it(demo_build: DemoBuild, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    os.system(f"{sys.executable} -m venv {bare}")  # noqa: S605 - a fixed command on a tmp path
    code, lines = doctor(demo_build.wheel, bare / "bin" / "python", smi(tmp_path, "9.0, 580.82.07"))
    assert code == 1
    assert lines["torch"].startswith("FAIL") and "no torch" in lines["torch"]
    assert lines["import"].startswith("FAIL") and "No module named 'torch'" in lines["import"]


def list_archs(manifest: Path, wheel: Path) -> None:
    """Give each entry of a site's packages.json the archs of `wheel`'s fatbins, as the index
    lists them, where it does not yet (every wheel of these sites carries the demo's binaries)."""
    data = json.loads(manifest.read_text())
    facts = read_wheel(wheel)
    archs = {"sass": [f"sm_{s}" for s in sorted(facts.cubins)],
             "ptx": [f"sm_{p}" for p in sorted(facts.ptx)]}  # fmt: skip
    for entry in data["wheels"]:
        entry.setdefault("archs", archs)
    manifest.write_text(json.dumps(data))


def test_index_mode_checks_the_offered_wheel_without_downloading_it(
    demo_build: DemoBuild, venv: Path, tmp_path: Path
) -> None:
    """`doctor NAME --index SITE`: the wheel for this interpreter, judged from packages.json."""
    house, site = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    shutil.copy(demo_build.wheel, house)
    shutil.copy(demo_build.wheel.with_name(demo_build.wheel.name + ".build.json"), house)
    wheelfarm("index", "--wheelhouse", house, "--out", site)
    manifest = json.loads((site / "packages.json").read_text())
    code, lines = doctor("wheelfarm-demo", venv, smi(tmp_path, "9.0, 580.82.07"), "--index", site)
    assert code == 1
    assert lines["import"].startswith("FAIL") and "found not installed" in lines["import"]
    if "archs" not in manifest["wheels"][0]:  # an index that does not list them yet
        assert lines["gpu"].startswith("FAIL") and "archs the index does not list" in lines["gpu"]
    list_archs(site / "packages.json", demo_build.wheel)
    code, lines = doctor("wheelfarm-demo", venv, smi(tmp_path, "7.5, 535.104.05"), "--index", site)
    assert code == 1
    assert lines["gpu"].startswith("FAIL")
    assert "sm_80: 8.0-8.x, sm_90: 9.0-9.x, PTX sm_90: 9.0 and newer (JIT)" in lines["gpu"]
    assert lines["driver"].startswith("FAIL") and "driver >= 580.65.06" in lines["driver"]
    assert all(lines[c].startswith("pass") for c in ("python", "platform", "torch", "cuda"))
    result = wheelfarm("doctor", "wheelfarm-demo", "--python", venv, "--index", site,
                       env=smi(tmp_path, "9.0, 580.82.07"), check=False)  # fmt: skip
    fix = f"--extra-index-url {site.as_uri()}/cu130/torch2.14/ --extra-index-url https://download.pytorch.org/whl/cu130"
    assert fix in result.stdout  # the farm's wheel, and torch (if it moves) from PyTorch's index
    assert result.stdout.count("FAIL") == 1  # only import: the wheel would run once installed


@pytest.mark.parametrize(
    ("message", "check"),
    [
        ("ImportError: /x/_C.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev", "torch"),
        ("ImportError: libcudart.so.12: cannot open shared object file", "cuda"),
        (
            "RuntimeError: CUDA error: no kernel image is available for execution on the device",
            "gpu",
        ),
        ("/lib64/libc.so.6: version `GLIBC_2.34' not found", "platform"),
        (
            "RuntimeError: The NVIDIA driver on your system is too old / driver version is insufficient",
            "driver",
        ),
    ],
)
def test_common_failures_are_decoded(message: str, check: str) -> None:
    decoded = decode(message)
    assert decoded is not None and decoded[0] == check


def test_doctor_index_stops_at_its_timeout_while_a_server_drips() -> None:
    with _server(DRIPPING, drip=10) as url:
        start = time.monotonic()
        result = wheelfarm("doctor", "demo", "--index", url, "--timeout", str(TIMEOUT), check=False)
        took = time.monotonic() - start
    assert result.returncode == 9, result.stderr
    assert took < TIMEOUT + SLACK
    assert "stopped at the overall time limit (--timeout 3s)" in result.stderr
    assert result.stderr.count("\n") == 1
