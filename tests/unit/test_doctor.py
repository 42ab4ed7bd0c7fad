"""doctor's "will it run here" shares the install helper's GPU query and arch rule, and takes
its driver floors from drivers.yaml (through the matrix's reader, like every YAML file)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest
from packaging.tags import Tag

from tests.roots import REPO
from wheelfarm import doctor
from wheelfarm.core.label import Label
from wheelfarm.core.root import FarmRoot

from .conftest import package_yaml

WHEEL = doctor.WheelFacts("x.whl", "x", Label.parse("cu130torch2.14"), Tag("cp312", "cp312", "x"))


def _env(driver: str, platform: str = "linux_x86_64") -> doctor.Env:
    return doctor.Env("3.12", platform, (2, 39), None, "13.0", gpu=(9, 0), driver=driver)


def test_without_nvml_the_gpu_comes_from_the_helpers_nvidia_smi_query(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[list[str]] = []

    def fake_run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        seen.append(command)
        return subprocess.CompletedProcess(command, 0, "12.0, 580.82.07\n8.6, 580.82.07\n", "")

    monkeypatch.setattr(subprocess, "run", fake_run)
    assert doctor.gpu_and_driver() == ((12, 0), "580.82.07")
    assert seen[0][0] == "nvidia-smi"


def test_no_nvidia_smi_is_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        raise FileNotFoundError(command[0])

    monkeypatch.setattr(subprocess, "run", missing)
    assert doctor.gpu_and_driver() == (None, None)


@pytest.mark.parametrize(
    ("driver", "platform", "ok"),
    [
        ("580.65.06", "linux_x86_64", True),
        ("575.57.08", "linux_x86_64", False),
        ("580.88", "win_amd64", True),
        ("580.65.06", "win_amd64", False),  # below Windows' 580.88
    ],
)
def test_the_driver_floor_is_drivers_yamls(driver: str, platform: str, ok: bool) -> None:
    check = doctor._driver(WHEEL, _env(driver, platform), REPO)
    assert check.ok is ok, check


def test_a_fork_that_raises_a_floor_in_drivers_yaml_is_held_to_it(
    matrix_dir: Callable[..., FarmRoot],
) -> None:
    text = (REPO.matrix / "drivers.yaml").read_text(encoding="utf-8")
    root = matrix_dir({"pkg": package_yaml("pkg")}, drivers=text.replace("580.65.06", "590.1.2"))
    check = doctor._driver(WHEEL, _env("580.65.06"), root)
    assert not check.ok
    assert check.needed == "driver >= 590.1.2 (CUDA 13.x)"
