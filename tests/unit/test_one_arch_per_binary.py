"""`arch.one_arch_per_binary` (tiny-cuda-nn: tinycudann_bindings._80_C, _90_C, ... each with its
arch's SASS and PTX): verify accepts exactly that layout, and still names a binary that holds
two archs, lacks its PTX, or an arch no binary holds. The binaries are minimal ELF files with
fatbins in NVIDIA's layout (tests/synthetic.py), inside a relabelled wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

from ghsim.synthetic import elf_with_fatbin, fatbin
from tests.roots import REPO
from wheelfarm.builder.binary import KIND_CUBIN, KIND_PTX
from wheelfarm.builder.policy import library_policy
from wheelfarm.builder.verify import Expectation, verify_static
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import ArchList

NAME, VERSION, LABEL = "tinycudann", "2.0", "cu130torch2.14"


def _wheel(tmp: Path, binaries: dict[int, list[tuple[int, int]]]) -> Path:
    """A tinycudann wheel whose `_{sm}_C` binaries hold the given (kind, sm) fatbin entries."""
    info = f"{NAME}-{VERSION}+{LABEL}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}+{LABEL}\n"
    files = {
        "tinycudann/__init__.py": b"",
        f"{info}/METADATA": meta.encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nTag: cp311-cp311-linux_x86_64\n",
    }
    for sm, entries in binaries.items():
        name = f"tinycudann_bindings/_{sm}_C.cpython-311-x86_64-linux-gnu.so"
        files[name] = elf_with_fatbin(fatbin(entries))
    path = tmp / f"{NAME}-{VERSION}+{LABEL}-cp311-cp311-linux_x86_64.whl"
    write_wheel(path, files, info)
    return path


def _problems(wheel: Path, archs: str, *, split: bool = True) -> list[str]:
    want = Expectation(
        name=NAME, version=VERSION, label=LABEL, python_tag="cp311", platform="linux_x86_64",
        archs=ArchList.parse(archs), policy=library_policy(REPO, "linux"),
        one_arch_per_binary=split,
    )  # fmt: skip
    return verify_static(wheel, want).problems


def _own(sm: int) -> list[tuple[int, int]]:
    return [(KIND_CUBIN, sm), (KIND_PTX, sm)]


def test_one_binary_per_arch_each_with_its_ptx_passes(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, {80: _own(80), 90: _own(90)})
    assert _problems(wheel, "8.0;9.0") == []
    # the same wheel read as an ordinary package: every binary lacks the other arch
    ordinary = _problems(wheel, "8.0;9.0", split=False)
    assert any("_80_C" in p and "missing SASS for sm_90" in p for p in ordinary)


@pytest.mark.parametrize(
    ("binaries", "problem"),
    [
        ({80: _own(80)}, "no binary holds sm_90"),
        ({80: [(KIND_CUBIN, 80)], 90: _own(90)}, "_80_C.cpython-311-x86_64-linux-gnu.so: missing PTX for sm_80"),
        ({80: [*_own(80), (KIND_CUBIN, 90)], 90: _own(90)}, "_80_C.cpython-311-x86_64-linux-gnu.so: holds SASS for sm_80, sm_90, not one arch of 8.0;9.0"),
        ({80: _own(80), 90: _own(90), 86: _own(86)}, "_86_C.cpython-311-x86_64-linux-gnu.so: holds SASS for sm_86, not one arch"),
    ],
)  # fmt: skip
def test_a_binary_off_the_layout_is_named(
    tmp_path: Path, binaries: dict[int, list[tuple[int, int]]], problem: str
) -> None:
    problems = _problems(_wheel(tmp_path, binaries), "8.0;9.0")
    assert any(problem in p for p in problems), problems


def test_the_shipped_tinycudann_file_asks_for_the_layout() -> None:
    packages = {p.name: p for p in load_matrix(REPO).packages}
    assert packages["tinycudann"].one_arch_per_binary
    assert not packages["simple-knn"].one_arch_per_binary
