"""doctor's fixes: a command that works (tests/integration/test_doctor.py runs them against a
local index), or what does not exist; never a bare `pip install 'torch==2.14.*'` (PyPI's torch,
on Windows the CPU build), an empty CUDA tag, or a wheel the farm does not plan."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from packaging.tags import Tag
from packaging.version import Version

from tests.roots import REPO
from wheelfarm import doctor
from wheelfarm.cli import doctor as cli_doctor
from wheelfarm.core.commands import install_commands
from wheelfarm.core.label import Label
from wheelfarm.core.root import FarmRoot
from wheelfarm.doctor_fix import Remedy

PY = "python_embeded\\python.exe"
SITE = "https://octo.github.io/farm/"
TORCH = "https://download.pytorch.org/whl/cu130"
REMEDY = Remedy(REPO, PY, SITE)


def wheel(label: str = "cu130torch2.14", python: str = "cp312") -> doctor.WheelFacts:
    return doctor.WheelFacts(f"flash_attn-2.8.3.post2+{label}", "flash-attn", Label.parse(label),
                             Tag(python, python, "win_amd64"), "2.8.3.post2")  # fmt: skip


def env(
    torch: str | None = "2.14.1+cu130", cuda: str | None = "13.0", python: str = "3.12"
) -> doctor.Env:
    return doctor.Env(python, "win_amd64", None, Version(torch) if torch else None, cuda)


def checks(
    facts: doctor.WheelFacts, machine: doctor.Env, remedy: Remedy = REMEDY
) -> dict[str, doctor.Check]:
    return {c.name: c for c in doctor._checks(facts, machine, REPO, remedy)}


def test_a_cpu_torch_is_replaced_by_its_cuda_build_from_pytorchs_index() -> None:
    cuda = checks(wheel(), env("2.14.1+cpu", None))["cuda"]
    assert not cuda.ok and cuda.found == "torch 2.14.1+cpu: a CPU build (no CUDA)"
    assert cuda.fix == f'{PY} -m pip install "torch==2.14.1+cu130" --index-url {TORCH}'


def test_no_torch_gets_the_wheels_torch_from_pytorchs_index() -> None:
    torch = checks(wheel(), env(None, None))["torch"]
    assert torch.fix == f'{PY} -m pip install "torch==2.14.1+cu130" --index-url {TORCH}'


def test_another_torch_minor_gets_the_farms_wheel_for_it_or_the_wheels_torch() -> None:
    torch = checks(wheel(), env("2.13.0+cu130"))["torch"]
    ours, theirs = torch.fix.splitlines()
    index = f"{SITE}cu130/torch2.13/"
    assert (
        ours
        == install_commands("flash-attn", "2.8.3.post2+cu130torch2.13", index, TORCH, python=PY).pip
    )
    assert theirs == f'{PY} -m pip install "torch==2.14.1+cu130" --index-url {TORCH}'


def test_a_python_the_farm_plans_gets_its_wheel() -> None:
    python = checks(wheel(python="cp311"), env())["python"]
    assert python.fix == install_commands("flash-attn", "2.8.3.post2+cu130torch2.14",
                                          f"{SITE}cu130/torch2.14/", TORCH, python=PY).pip  # fmt: skip


@pytest.mark.parametrize(
    ("machine", "says"),
    [
        (env(python="3.15"), "the farm plans no flash-attn 2.8.3.post2 wheel for cu130 / torch 2.14 / Python 3.15 / win_amd64: torch 2.14 ships Python 3.10 to 3.14, not 3.15 (torch.yaml)"),
        (env("2.3.1+cu130"), "the farm plans no flash-attn 2.8.3.post2 wheel for cu130 / torch 2.3 / Python 3.12 / win_amd64: torch 2.3 is not in the farm's grid"),
    ],
)  # fmt: skip
def test_a_cell_the_farm_does_not_plan_is_named(machine: doctor.Env, says: str) -> None:
    found = checks(wheel(python="cp311"), machine)
    fixes = "\n".join(c.fix for c in found.values())
    assert says in fixes


def test_torch_that_torch_does_not_ship_is_named() -> None:
    torch = checks(wheel("cu130torch2.8"), env())["torch"]
    assert "torch 2.8 ships no cu130 build (it ships cu126, cu128, cu129)" in torch.fix


def test_without_a_site_the_fix_names_the_wheel_and_how_to_get_its_command() -> None:
    python = checks(wheel(python="cp311"), env(), Remedy(REPO, PY))["python"]
    assert python.fix == (
        "install the farm's flash-attn==2.8.3.post2+cu130torch2.14 from the cu130/torch2.14/ "
        "index of its site (`wheelfarm doctor flash-attn --index SITE` prints the command)"
    )


def test_no_fix_names_an_empty_cuda_tag_or_pypis_torch() -> None:
    for machine in (env("2.14.1+cpu", None), env(None, None), env("2.13.0+cu126", "12.6")):
        for check in checks(wheel(python="cp311"), machine).values():
            assert "for cu," not in check.fix and "built for cu " not in check.fix
            assert "'torch==" not in check.fix  # the former fix: PyPI's torch
            for line in check.fix.splitlines():
                if "pip install" in line and '"torch==' in line:
                    assert "--index-url https://download.pytorch.org/whl/cu" in line


def test_the_report_prints_each_fix_on_its_own_line() -> None:
    text = doctor.report([doctor.failed("torch", "torch 2.13.0", "torch 2.14.x", "A\nB")])
    assert text.splitlines()[1:] == ["             fix: A", "             or:  B"]


def test_a_cell_a_package_file_excludes_quotes_its_reason_and_line() -> None:
    facts = doctor.WheelFacts("f", "flash-attn", Label.parse("cu130torch2.10"),
                              Tag("cp312", "cp312", "manylinux_2_28_aarch64"), "2.8.3.post2")  # fmt: skip
    machine = doctor.Env("3.12", "linux_aarch64", (2, 39), Version("2.10.0+cu126"), "12.6")
    ours, theirs = checks(facts, machine)["cuda"].fix.splitlines()
    assert ours == (
        "the farm plans no flash-attn 2.8.3.post2 wheel for cu126 / torch 2.10 / Python 3.12 / "
        'linux_aarch64: matrix/packages/flash-attn.yaml:26 excludes it: "sm80/sm90 kernels only; '
        "torch's aarch64 cu126 list adds nothing a GH200 user lacks on cu130\""
    )
    assert theirs == f'{PY} -m pip install "torch==2.10.0+cu130" --index-url {TORCH}'


def test_a_package_the_farm_does_not_have_is_named_not_guessed() -> None:
    cell = {"cuda": "cu130", "torch": "2.14", "python": "3.12", "platform": "win_amd64"}
    assert REMEDY.wheel("vllm", "0.11.0", cell) == (
        "the farm plans no vllm wheel: vllm is none of its packages"
    )
    assert REMEDY.wheel("vllm", "0.11.0", {**cell, "cuda": None}) == ""  # torch's fix first


def test_a_root_without_a_matrix_names_what_to_install_without_inventing_a_command(
    tmp_path: Path,
) -> None:
    bare = Remedy(FarmRoot(tmp_path), PY, SITE)
    assert bare.torch("2.14", "cu130") == "install torch 2.14's cu130 build from PyTorch's index"
    fixes = "\n".join(
        c.fix for c in checks(wheel(python="cp311"), env("2.13.0+cu130"), bare).values()
    )
    assert "pip install" not in fixes
    assert "install the flash-attn wheel built for your torch, CUDA, Python and platform" in fixes


@pytest.mark.parametrize(
    ("venv", "own", "expect"),
    [
        ("venv", False, "venv"),  # the active venv: uvx's and pipx's own environment is not it
        ("venv", True, "self"),  # doctor runs from the active venv: this interpreter
        (None, False, "self"),
    ],
)
def test_doctor_checks_the_active_venv_not_its_own_environment(
    venv: str | None, own: bool, expect: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    if venv is None:
        monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    else:
        monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / venv))
    monkeypatch.setattr(sys, "prefix", str(tmp_path / venv) if own else "/elsewhere")
    got = cli_doctor._default_python()
    assert got == (str(python) if expect == "venv" else sys.executable)
