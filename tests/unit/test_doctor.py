"""doctor's "will it run here" shares the install helper's probe, GPU query, arch rule and wheel
ranking, and takes its driver floors from drivers.yaml (through the matrix's reader, like every
YAML file)."""

from __future__ import annotations

import io
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import requests
from packaging.tags import Tag

from ghsim.synthetic import sample_record
from tests.roots import REPO
from tests.unit.helpers.install import entry, machine
from tests.unit.helpers.roots import package_yaml
from tests.unit.helpers.wheels import FATBINS
from wheelfarm import doctor
from wheelfarm.builder.binary import parse_fatbin
from wheelfarm.core.errors import NetworkError, UsageError
from wheelfarm.core.label import Label
from wheelfarm.core.record import CompiledFacts, path_for
from wheelfarm.core.root import FarmRoot
from wheelfarm.doctor_import import Installed
from wheelfarm.scripts import wheelfarm_install as helper

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
        "demo/_C.cpython-312-x86_64-linux-gnu.so",
        "demo/ops/_ext.so",
        "../../../lib/other.so",
        "../../../bin/demo",
        f"{info.name}/METADATA",
        f"{info.name}/RECORD",
    ]
    (info / "RECORD").write_text("".join(f"{name},,\n" for name in record))
    env = doctor.Env("3.12", "linux_x86_64", (2, 39), None, "13.0", path=(str(tmp_path),))
    facts, modules, binaries = doctor.installed("python", env, "demo")
    assert (facts.label, facts.tag, modules) == (
        Label.parse("cu130torch2.14"),
        Tag("cp312", "cp312", "linux_x86_64"),
        ["demo"],
    )
    # every extension module of its RECORD, loaded from its site-packages (none outside it)
    assert binaries == Installed(
        str(tmp_path), ("demo/_C.cpython-312-x86_64-linux-gnu.so", "demo/ops/_ext.so")
    )
    with pytest.raises(UsageError, match="'other' is not installed in python"):
        doctor.installed("python", env, "other")


def _env_arch_variants(cc: tuple[int, int]) -> doctor.Env:
    return doctor.Env("3.12", "linux_x86_64", (2, 39), None, "13.0", gpu=cc, driver="580.95.05")


@pytest.mark.parametrize(
    ("sass", "cc", "ok"),
    [(["sm_120a"], (12, 1), False), (["sm_120a"], (12, 0), True), (["sm_120f"], (12, 1), True)],
)
def test_doctor_applies_the_rule_to_an_index_entry(
    sass: list[str], cc: tuple[int, int], ok: bool
) -> None:
    facts = doctor._entry_facts(entry(archs={"sass": sass, "ptx": []}))
    check = doctor._gpu(facts, _env_arch_variants(cc))
    assert check.ok is ok
    assert check.needed == f"a GPU these run on: {helper.runs_where(sass[0])}"


def test_doctor_reads_the_variant_from_the_binary() -> None:
    facts = doctor.WheelFacts(
        "x.whl", "x", Label.parse("cu130torch2.14"), Tag("cp312", "cp312", "x")
    )
    blob = (FATBINS / "sm_120a.fatbin").read_bytes()
    facts.cubins, facts.ptx = (set(found) for found in parse_fatbin(blob))
    assert not doctor._gpu(facts, _env_arch_variants((12, 1))).ok
    assert doctor._gpu(facts, _env_arch_variants((12, 0))).ok


def test_an_oversized_packages_json_over_http_is_cut_at_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """doctor --index reads a server's packages.json through core.http's capped read: a body
    past MAX_INDEX_BYTES is refused as it streams in, not held whole and then parsed."""

    class Session:
        def request(self, method: str, url: str, **_: object) -> requests.Response:
            response = requests.Response()
            response.status_code, response.url = 200, url
            response.raw = io.BytesIO(b" " * 5000)
            return response

    monkeypatch.setattr(doctor, "MAX_INDEX_BYTES", 100)
    monkeypatch.setattr(doctor, "make_session", Session)
    with pytest.raises(NetworkError, match=r"packages\.json: the answer is over 100 bytes"):
        doctor._index_wheels("https://farm.example/", None)


def test_doctor_shows_where_the_kernels_ran_beside_the_archs(tmp_path: Path) -> None:
    from wheelfarm.core.record import KernelCheck, path_for

    kernels = KernelCheck(
        passed=False, gpu="NVIDIA H100 80GB HBM3", sm="sm_90", driver="580.65.06",
        checked="2026-12-07T10:00:00+00:00", runner=None, reference="r", largest=None,
        largest_op=None, failure="x", ops=(),
    )  # fmt: skip
    ran = {"text": "sm_90, NVIDIA H100 80GB HBM3, driver 580.65.06, 2026-12-07", "passed": True}
    facts = doctor._entry_facts(entry(archs={"sass": ["sm_90"], "ptx": []}, kernels=ran))
    needed = doctor._gpu(facts, _env_arch_variants((9, 0))).needed
    assert needed.endswith(
        "(kernels ran on sm_90, NVIDIA H100 80GB HBM3, driver 580.65.06, 2026-12-07)"
    )
    listed = doctor._entry_facts(
        entry(archs={"sass": ["sm_90"], "ptx": []}, kernels="kernels not run on a GPU")
    )
    assert doctor._gpu(listed, _env_arch_variants((9, 0))).needed.endswith(
        "(kernels not run on a GPU)"
    )
    hostile = {"text": "\u202eevil\x1b[2J", "passed": True}
    assert doctor.listed_kernels(hostile) == "kernels ran on ?evil?[2J"
    wheel = tmp_path / "demo.whl"
    assert doctor.recorded_facts(wheel) == ("", "")  # no record beside it
    path_for(wheel).write_text(sample_record(kernels=kernels).to_json(), encoding="utf-8")
    assert doctor.recorded_facts(wheel)[0] == (
        "kernels failed on sm_90, NVIDIA H100 80GB HBM3, driver 580.65.06, 2026-12-07"
    )


def test_the_cuda_check_names_the_compile_that_built_the_wheel(tmp_path: Path) -> None:
    """A cu132 wheel from the cu130 compile (ADR 19): doctor says so beside what it needs,
    from the record beside a wheel file or from packages.json."""
    facts = CompiledFacts(
        id="demo-1.0-cu13torch2.15-cp312-linux_x86_64", cuda="cu130",
        variants=("cu130", "cu132"), verified_with=None,
    )  # fmt: skip
    wheel = tmp_path / "demo.whl"
    path_for(wheel).write_text(sample_record(compiled=facts).to_json(), encoding="utf-8")
    built = doctor.recorded_facts(wheel)[1]
    assert built.endswith("(cu130's toolkit), one compile for cu130 and cu132 "
                          "(demo-1.0-cu13torch2.15-cp312-linux_x86_64)")  # fmt: skip
    listed = doctor._entry_facts(
        entry(version="1.0+cu132torch2.15", archs={"sass": ["sm_90"], "ptx": []}, compiled=built)
    )
    assert listed.compiled == built
    hostile = doctor._entry_facts(entry(archs={"sass": [], "ptx": []}, compiled="x\x1b[2J"))
    assert hostile.compiled == "x?[2J"
