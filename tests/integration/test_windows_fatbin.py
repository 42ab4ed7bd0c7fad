"""verify's arch check on a real PE: a mingw-built DLL whose `.nv_fatb` section (where MSVC
builds keep nvcc's fatbin) holds a fatbin nvcc 13.0 made here for sm_90 and sm_120a, +PTX.
The reader names the archs NVIDIA's cuobjdump reads from the same fatbin."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.builder.binary import inspect_binary
from wheelfarm.builder.policy import library_policy
from wheelfarm.builder.verify import _arch_problems
from wheelfarm.matrix.model import ArchList

from .test_arch_variants import KERNEL, NVCC, _cuobjdump, _cuobjdump_archs
from .test_windows_repair import MINGW, _dll

pytestmark = pytest.mark.integration
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
