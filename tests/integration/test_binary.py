"""Tests of what binary does (filed by module: tests/README.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import KERNEL, MINGW, NVCC, _cuobjdump, _cuobjdump_archs, _dll
from tests.integration.test_doctor import doctor, smi
from tests.roots import REPO
from wheelfarm.builder.binary import inspect_binary
from wheelfarm.builder.platforms import current
from wheelfarm.builder.policy import library_policy
from wheelfarm.builder.verify import _arch_problems
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.matrix.model import ArchList

pytestmark = pytest.mark.integration


VARIANTS = ("90", "90a", "120a", "120f")


HELPER = Path(__file__).parents[2] / "scripts" / "wheelfarm_install.py"


CP = f"cp{sys.version_info[0]}{sys.version_info[1]}"


@pytest.fixture(scope="module")
def objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """variant -> a shared object nvcc built with its cubin and its PTX (about 3 s each)."""
    if not NVCC.is_file():
        pytest.skip("needs nvcc at /usr/local/cuda")
    out = tmp_path_factory.mktemp("archs")
    (out / "k.cu").write_text(KERNEL)
    built = {}
    for v in VARIANTS:
        so = out / f"k_{v}.so"
        gencode = [f"arch=compute_{v},code=sm_{v}", f"arch=compute_{v},code=compute_{v}"]
        subprocess.run(
            [NVCC, "-shared", "-Xcompiler", "-fPIC", out / "k.cu", "-o", so,
             *(arg for g in gencode for arg in ("-gencode", g))],
            check=True, capture_output=True,
        )  # fmt: skip
        built[v] = so
    return built


@pytest.fixture(scope="module")
def torch_python(torch_env: Path) -> Path:
    """The python of the run's shared torch 2.14.1 (cu130) environment."""
    return current().venv_python(torch_env)


def _wheel(so: Path, dest: Path, variant: str) -> Path:
    """A farm-labelled wheel carrying only that object, as its extension module."""
    version = "1.0+cu130torch2.14"
    name = f"arch{variant}"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": b"",
        f"{name}/_k.cpython-{CP[2:]}-x86_64-linux-gnu.so": so.read_bytes(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {CP}-{CP}-linux_x86_64\n".encode(),
    }
    out = dest / f"{name}-{version}-{CP}-{CP}-linux_x86_64.whl"
    write_wheel(out, files, info)
    return out


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_reader_names_each_variant_as_cuobjdump_does(
    objects: dict[str, Path], variant: str
) -> None:
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("needs cuobjdump (pip install nvidia-cuda-cuobjdump)")
    info = inspect_binary(objects[variant].read_bytes())
    assert _cuobjdump_archs(tool, objects[variant]) == (set(info.cubins), set(info.ptx))
    assert info.cubins == info.ptx == {f"sm_{variant}"}


@pytest.mark.parametrize(
    ("variant", "cc", "runs"),
    [
        ("120a", "12.1", False),
        ("120a", "12.0", True),
        ("120f", "12.1", True),
        ("120f", "12.0", True),
    ],
)
def test_doctor_and_install_py_apply_the_rule_to_real_objects(
    objects: dict[str, Path], torch_python: Path, tmp_path: Path, variant: str, cc: str, runs: bool
) -> None:
    wheel = _wheel(objects[variant], tmp_path, variant)
    env = smi(tmp_path, f"{cc}, 580.95.05")
    _, lines = doctor(wheel, torch_python, env)
    where = "12.0 only" if variant == "120a" else "12.0-12.x"
    assert lines["gpu"].startswith("pass" if runs else "FAIL"), lines["gpu"]
    assert (
        f"found compute capability {cc}; needs a GPU these run on: sm_{variant}: {where}"
        in lines["gpu"]
    )

    site = tmp_path / "site"
    site.mkdir()
    info = inspect_binary(objects[variant].read_bytes())
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    entry = {
        "name": f"arch{variant}", "version": "1.0+cu130torch2.14", "public_version": "1.0",
        "filename": wheel.name, "url": f"files/{wheel.name}", "sha256": "0" * 64, "cuda": "cu130",
        "covers": [{"cuda": "cu130", "torch": "2.14", "python": python, "platform": "linux_x86_64"}],
        "archs": {"sass": sorted(info.cubins), "ptx": sorted(info.ptx)},
    }  # fmt: skip
    (site / "packages.json").write_text(json.dumps({"wheels": [entry]}))
    result = subprocess.run(
        [sys.executable, HELPER, f"arch{variant}", "--index", site.as_uri(), "--python",
         torch_python, "--dry-run"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == (0 if runs else 4), result.stderr
    if not runs:
        assert (
            f"GPU 0 (compute capability {cc}) has no SASS or PTX that runs on it" in result.stderr
        )


GENCODE = ("arch=compute_90,code=sm_90", "arch=compute_120a,code=[sm_120a,compute_120a]")


@pytest.fixture(scope="module")
def fatbin_dll(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the fatbin, a DLL carrying it as `.nv_fatb`); about 2 s. tests/unit/fatbins holds the
    same DLL for the unit tests."""
    if not NVCC.is_file() or shutil.which(MINGW) is None:
        pytest.skip("needs nvcc at /usr/local/cuda and mingw-w64")
    out = tmp_path_factory.mktemp("pe_fatbin")
    (out / "k.cu").write_text(KERNEL)
    fatbin = out / "k.fatbin"
    subprocess.run(
        [NVCC, "-fatbin", *(a for g in GENCODE for a in ("-gencode", g)), out / "k.cu",
         "-o", fatbin],
        check=True, capture_output=True,
    )  # fmt: skip
    # as MSVC builds keep it: a read-only data section named .nv_fatb (8 characters, PE's most)
    section = f'__asm__(".section .nv_fatb,\\"dr\\"\\n.incbin \\"{fatbin}\\"\\n.text\\n");\n'
    dll = _dll(out, "kernels.dll", extra=section)
    return fatbin, dll


def test_the_pe_reader_names_the_archs_cuobjdump_reads(fatbin_dll: tuple[Path, Path]) -> None:
    fatbin, dll = fatbin_dll
    tool = _cuobjdump()
    if tool is None:
        pytest.skip("needs cuobjdump (pip install nvidia-cuda-cuobjdump)")
    info = inspect_binary(dll.read_bytes())
    assert (info.cubins, info.ptx) == ({"sm_90", "sm_120a"}, {"sm_120a"})
    assert _cuobjdump_archs(tool, fatbin) == (set(info.cubins), set(info.ptx))
    policy = library_policy(REPO, "windows")
    assert all(policy.is_system(n) or policy.is_provided(n) for n in info.needed)


def test_verify_checks_the_archs_of_the_pe(fatbin_dll: tuple[Path, Path]) -> None:
    info = inspect_binary(fatbin_dll[1].read_bytes())
    # a policy may not promise arch-specific PTX (`12.0a+PTX` is refused: it runs on no later
    # GPU), so the fatbin's compute_120a is named as PTX no policy asks for
    (extra,) = _arch_problems("pkg/kernels.dll", info, ArchList.parse("9.0;12.0a"))
    assert extra.startswith("pkg/kernels.dll: unexpected PTX for sm_120a")
    missing = _arch_problems("pkg/kernels.dll", info, ArchList.parse("9.0;10.0;12.0a"))
    assert any("missing SASS for sm_100" in m for m in missing)


@pytest.mark.parametrize("cut", [0.01, 0.25, 0.5, 0.9, 0.99])
def test_a_truncated_pe_is_one_line(fatbin_dll: tuple[Path, Path], cut: float) -> None:
    data = fatbin_dll[1].read_bytes()  # stripped (-s): it ends with its last section
    with pytest.raises(ValueError, match=r"^(truncated|corrupt) PE: [^\n]*$"):
        inspect_binary(data[: int(len(data) * cut)])
