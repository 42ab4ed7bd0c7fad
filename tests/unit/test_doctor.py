"""doctor's "will it run here" shares the install helper's probe, GPU query, arch rule and wheel
ranking, and takes its driver floors from drivers.yaml (through the matrix's reader, like every
YAML file)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.tags import Tag

from tests.roots import REPO
from wheelfarm import doctor
from wheelfarm.core.errors import UsageError
from wheelfarm.core.label import Label
from wheelfarm.core.root import FarmRoot
from wheelfarm.scripts import wheelfarm_install as helper

from .conftest import package_yaml
from .test_install_helper import TORCH, entry, machine

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

    assert doctor.gpu_and_driver(run=fake_run) == ((12, 0), "580.82.07")
    assert seen[0][0] == "nvidia-smi"


def test_no_nvidia_smi_is_no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        raise FileNotFoundError(command[0])

    assert doctor.gpu_and_driver(run=missing) == (None, None)


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


def test_doctor_and_the_helper_read_one_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One program asks the interpreter, and both tools read the same cell from its answer."""
    machine(tmp_path, monkeypatch, [], None)
    seen: list[list[str]] = []
    answer = subprocess.run  # machine's stand-in, which answers as Python 3.12 with torch 2.14.1

    def spy(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        seen.append(command)
        return answer(command, **kwargs)

    mine = helper.probe("python3.12", spy)
    env = doctor.probe("python3.12", run=spy)
    assert seen == [["python3.12", "-c", helper.PROBE]] * 2
    assert {k: mine[k] for k in helper.CELL} == doctor.cell(env)
    assert mine["torch_version"] == TORCH and str(env.torch) == f"{TORCH}+cu130"


def _covering(version: str, cuda: str = "cu130", torch: str = "2.14") -> dict[str, Any]:
    wheel = entry(f"{version}+{cuda}torch{torch}")
    wheel["covers"] = [{"cuda": cuda, "torch": torch, "python": "3.12", "platform": "linux_x86_64"}]
    return wheel


@pytest.mark.parametrize(
    ("wheels", "helpers", "doctors"),
    [
        # the exact cell wins over a newer wheel for another torch, for both tools
        (["1.0", ("2.0", "cu130", "2.13")], "1.0", "1.0"),
        # two that cover it: the newer (PEP 440: 1.0.post1 > 1.0)
        (["1.0", "1.0.post1", ("3.0", "cu126", "2.13")], "1.0.post1", "1.0.post1"),
        # none covers it: the helper installs nothing, doctor judges the nearest (3 of 4 agree)
        ([("2.0", "cu130", "2.13"), ("3.0", "cu126", "2.13")], None, "2.0"),
        # equally near: the newer
        ([("2.0", "cu130", "2.13"), ("2.1", "cu126", "2.14")], None, "2.1"),
    ],
)
def test_one_ranking_exact_for_the_helper_nearest_for_doctor(
    wheels: list[str | tuple[str, str, str]],
    helpers: str | None,
    doctors: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same packages.json and the same interpreter answer: the helper's choice is the exact
    cell's newest wheel, doctor's the nearest one, by the one ranking."""
    listed = [_covering(w) if isinstance(w, str) else _covering(*w) for w in wheels]
    machine(tmp_path, monkeypatch, listed, None)
    base = str(tmp_path) + "/"
    wheels = helper.read_index(tmp_path.as_uri() + "/")
    chosen = helper.choose(wheels, "demo", None, helper.probe("python3.12"))
    picked = doctor._pick(
        doctor._index_wheels(base, None), "demo", doctor.probe("python3.12"), base
    )
    assert (chosen or {}).get("public_version") == helpers
    assert picked["public_version"] == doctors


def test_doctor_keeps_its_messages_for_an_index_without_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine(tmp_path, monkeypatch, [entry()], None)
    env, base = doctor.probe("python3.12"), str(tmp_path) + "/"
    with pytest.raises(UsageError, match=r"packages.json lists no other wheel; it has: demo"):
        doctor._pick(doctor._index_wheels(base, None), "other", env, base)


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        ("", "does not run as a Python interpreter (JSONDecodeError"),
        ("[1]", "answered the probe with [1]"),
    ],
)
def test_an_interpreter_that_does_not_answer_is_a_usage_error(
    stdout: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 0, stdout, "")

    with pytest.raises(UsageError, match=re.escape(message)):
        doctor.probe("python", run=run)


def test_a_missing_torch_is_an_answer_for_doctor_and_a_refusal_for_the_helper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The probe does not refuse an interpreter without torch: doctor reports it in its torch
    check, the helper refuses it with its message (a torch that fails to import is named)."""
    answers = [
        {"torch_error": "ModuleNotFoundError(\"No module named 'torch'\")"},
        {"torch_error": "OSError('libcudart.so.13: cannot open shared object file')"},
    ]

    def run(command: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        found = {"python": "3.12", "platform": "linux_x86_64", "torch": None, "cuda": None,
                 "dist": None, "glibc": "2.39", "path": [], **answers[0]}  # fmt: skip
        return subprocess.CompletedProcess(command, 0, json.dumps(found), "")

    env = doctor.probe("python", run=run)
    assert env.torch is None and env.glibc == (2, 39) and "No module named" in str(env.torch_error)
    with pytest.raises(
        helper.HelperError, match=r"no CUDA build of torch is installed \(torch=None\)\."
    ):
        helper.probe("python", run)
    answers.pop(0)
    with pytest.raises(helper.HelperError, match=r"\(torch=None: OSError\('libcudart.so.13"):
        helper.probe("python", run)


def test_doctor_reads_an_installed_package_from_the_interpreters_path(tmp_path: Path) -> None:
    """The probe names the interpreter's sys.path; doctor reads the distribution's metadata
    there: its version and WHEEL tag, and its top-level packages (not a script's '..')."""
    info = tmp_path / "demo-1.0+cu130torch2.14.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: demo\nVersion: 1.0+cu130torch2.14\n"
    )
    (info / "WHEEL").write_text("Wheel-Version: 1.0\nTag: cp312-cp312-linux_x86_64\n")
    record = [
        "demo/__init__.py",
        "../../../bin/demo",
        f"{info.name}/METADATA",
        f"{info.name}/RECORD",
    ]
    (info / "RECORD").write_text("".join(f"{name},,\n" for name in record))
    env = doctor.Env("3.12", "linux_x86_64", (2, 39), None, "13.0", path=(str(tmp_path),))
    facts, modules = doctor.installed("python", env, "demo")
    assert (facts.label, facts.tag, modules) == (
        Label.parse("cu130torch2.14"),
        Tag("cp312", "cp312", "linux_x86_64"),
        ["demo"],
    )
    with pytest.raises(UsageError, match="'other' is not installed in python"):
        doctor.installed("python", env, "other")
