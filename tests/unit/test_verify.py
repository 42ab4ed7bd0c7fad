"""Tests of what verify does (filed by module: tests/README.md)."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ghsim.synthetic import elf_with_fatbin, fatbin
from tests.roots import REPO
from tests.unit.helpers.roots import PYCUDA
from tests.unit.helpers.strategies import FEW, MEMBERS, _mutated, _outcome
from tests.unit.helpers.wheels import (
    INFO,
    NAME,
    WHEEL,
    _make_zip,
    _own,
    _problems_one_arch_per_binary,
    _want,
    _wheel,
    _wheel_hostile,
    _wheel_one_arch_per_binary,
    elf_with_origin,
)
from wheelfarm.builder.binary import KIND_CUBIN
from wheelfarm.builder.build import expectation
from wheelfarm.builder.policy import library_policy
from wheelfarm.builder.relabel import relabel
from wheelfarm.builder.target import resolve
from wheelfarm.builder.verify import Expectation, verify_static
from wheelfarm.core.archive import Limits
from wheelfarm.core.wheelfile import metadata, write_wheel
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Arch, ArchList


def _pycuda_wheel(tmp: Path, binary: bytes) -> Path:
    info = "pycuda-2026.1+cu130.dist-info"
    files = {
        "pycuda/__init__.py": b"",
        "pycuda/_driver.cpython-312-x86_64-linux-gnu.so": binary,
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: pycuda\nVersion: 2026.1+cu130\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nTag: cp312-cp312-manylinux_2_28_x86_64\n",
    }
    path = tmp / "pycuda-2026.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"
    write_wheel(path, files, info)
    return path


def test_verify_expects_no_fatbin_and_refuses_one(tmp_path: Path) -> None:
    matrix = load_matrix(REPO)
    want = expectation(resolve(matrix, expand(matrix), PYCUDA))
    plain = _pycuda_wheel(tmp_path, elf_with_fatbin(b""))  # an ELF without device code
    assert verify_static(plain, want).problems == []
    (tmp_path / "sass").mkdir()
    sass = _pycuda_wheel(tmp_path / "sass", elf_with_fatbin(fatbin([(KIND_CUBIN, 90)])))
    (problem,) = verify_static(sass, want).problems
    assert problem == (
        "pycuda/_driver.cpython-312-x86_64-linux-gnu.so: unexpected SASS for sm_90 "
        "(policy: no device code, arch.via none)"
    )


def test_relabel_rewrites_name_metadata_dist_info_and_record(tmp_path: Path) -> None:
    out = relabel(_wheel(tmp_path), "cu130torch2.14", tmp_path / "out")
    assert out.name == "demo_pkg-1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl"
    assert metadata(out)["version"] == "1.0+cu130torch2.14"
    names = zipfile.ZipFile(out).namelist()
    assert "demo_pkg-1.0+cu130torch2.14.dist-info/RECORD" in names
    report = verify_static(
        out,
        Expectation(
            name="demo-pkg",
            version="1.0",
            label="cu130torch2.14",
            python_tag="cp312",
            platform="linux_x86_64",
            archs=ArchList.parse("9.0"),
            policy=library_policy(REPO, "linux"),
        ),
    )
    # only the missing device code is wrong: name, METADATA and RECORD agree
    assert report.problems == ["no shared object carries CUDA device code (no fatbin)"]


def _problems(wheel: Path) -> list[str]:
    return [
        p for p in verify_static(wheel, _want()).problems if "no shared object carries" not in p
    ]


def test_a_clean_wheel_has_no_problem_but_its_missing_device_code(tmp_path: Path) -> None:
    assert _problems(_wheel_hostile(tmp_path)) == []


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"torch/lib/libc10.so": b"\0"}, "ships torch/lib/libc10.so: torch/CUDA provide it"),
        ({"wheelfarm_demo/libcudart.so.13": b"\0"}, "ships wheelfarm_demo/libcudart.so.13"),
        ({"../../evil.py": b""}, "member '../../evil.py' climbs out of the folder with '..'"),
        ({"/etc/evil.py": b""}, "member '/etc/evil.py' is an absolute path"),
        ({f"{INFO}/WHEEL": None}, f"{INFO}/WHEEL is missing"),
        ({f"{INFO}/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-any\n"}, "tags ['py3-none-any'] differ"),
        ({f"{INFO}/WHEEL": WHEEL.replace(b"1.0", b"2.0", 1)}, "Wheel-Version '2.0', installers read 1.x"),
        ({"wheelfarm_demo/_C.so": b"\x7fELF\x02\x01\x01" + b"\0" * 20}, "wheelfarm_demo/_C.so: unreadable binary: truncated ELF"),
    ],
    ids=["libc10 outside .libs", "cudart", "dotdot", "absolute", "no WHEEL", "WHEEL tags", "WHEEL version", "truncated ELF"],
)  # fmt: skip
def test_verify_fails_a_hostile_wheel(
    extra: dict[str, bytes | None], problem: str, tmp_path: Path
) -> None:
    problems = _problems(_wheel_hostile(tmp_path, **extra))
    assert any(problem in p for p in problems), problems


def test_verify_reads_no_member_of_a_wheel_past_the_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("wheelfarm.builder.verify.WHEEL_LIMITS", Limits(max_members=3))
    problems = _problems(
        _wheel_hostile(tmp_path, **{"wheelfarm_demo/a.py": b"", "wheelfarm_demo/b.py": b""})
    )
    assert problems == [
        (
            "more than 3 members (at 'wheelfarm_demo/__init__.py'); a real package holds far fewer: "
            "not read further"
        )
    ]


@pytest.mark.parametrize("cut", [lambda data: b"not a zip", lambda data: data[:-30]])
def test_verify_a_non_zip_or_cut_wheel_is_one_problem(
    cut: Callable[[bytes], bytes], tmp_path: Path
) -> None:
    wheel = _wheel_hostile(tmp_path)
    wheel.write_bytes(cut(wheel.read_bytes()))
    assert verify_static(wheel, _want()).problems == [f"cannot read {NAME}: File is not a zip file"]


def test_one_binary_per_arch_each_with_its_ptx_passes(tmp_path: Path) -> None:
    wheel = _wheel_one_arch_per_binary(tmp_path, {80: _own(80), 90: _own(90)})
    assert _problems_one_arch_per_binary(wheel, "8.0;9.0") == []
    # the same wheel read as an ordinary package: every binary lacks the other arch
    ordinary = _problems_one_arch_per_binary(wheel, "8.0;9.0", per_binary="all")
    assert any("_80_C" in p and "missing SASS for sm_90" in p for p in ordinary)


@pytest.mark.parametrize("runpath", ["$ORIGIN", "absolute"])
def test_a_library_shipped_beside_a_binary_counts_only_through_origin(
    runpath: str, tmp_path: Path
) -> None:
    """llama.cpp's libllama.so needs libggml.so.0 from its own folder, found by its RUNPATH
    $ORIGIN: that is shipped, not missing; without $ORIGIN the loader would not look there."""
    plain, origin = elf_with_origin()
    ours = {"wheelfarm_demo/lib/libcrypto.so.3": elf_with_fatbin(b"")}
    binary = origin if runpath == "$ORIGIN" else plain
    wheel = _wheel_hostile(tmp_path, **{"wheelfarm_demo/lib/_ssl.so": binary}, **ours)
    problems = [p for p in verify_static(wheel, _want()).problems if "_ssl.so needs" in p]
    missing = [p for p in problems if "needs libcrypto.so.3, which is neither" in p]
    assert len(missing) == (0 if runpath == "$ORIGIN" else 1)


SM90A = ArchList.parse("9.0a").archs[0]  # SageAttention builds 9.0 as sm_90a
SOME = "8.0;8.9;9.0a"


def _sage(
    **binaries: list[tuple[int, Arch | int]],
) -> dict[int | str, list[tuple[int, Arch | int]]]:
    """woct0rdho's SageAttention layout: _fused holds every arch, each _qattn one or some."""
    fused = [(KIND_CUBIN, 80), (KIND_CUBIN, 89), (KIND_CUBIN, SM90A)]
    return {"fused": fused, "80": [(KIND_CUBIN, 80)], "90": [(KIND_CUBIN, SM90A)], **binaries}


def test_some_archs_per_binary_passes_when_the_binaries_together_hold_the_list(
    tmp_path: Path,
) -> None:
    wheel = _wheel_one_arch_per_binary(tmp_path, _sage(**{"89": [(KIND_CUBIN, 89)]}))
    assert _problems_one_arch_per_binary(wheel, SOME, per_binary="some") == []
    # read as an ordinary package, each _qattn binary lacks the others' archs
    ordinary = _problems_one_arch_per_binary(wheel, SOME, per_binary="all")
    assert any("_80_C" in p and "missing SASS for sm_89, sm_90a" in p for p in ordinary)


@pytest.mark.parametrize(
    ("binaries", "problem"),
    [
        ({"fused": [(KIND_CUBIN, 80), (KIND_CUBIN, SM90A)]}, "no binary holds sm_89 (arch.some_archs_per_binary"),
        ({"89": [(KIND_CUBIN, 89), (KIND_CUBIN, 86)]}, "_89_C.cpython-311-x86_64-linux-gnu.so: unexpected SASS for sm_86"),
        ({"75": [(KIND_CUBIN, 75)]}, "_75_C.cpython-311-x86_64-linux-gnu.so: holds SASS for sm_75, none of 8.0;8.9;9.0a"),
    ],
)  # fmt: skip
def test_some_archs_per_binary_refuses(
    binaries: dict[str, list[tuple[int, Arch | int]]], problem: str, tmp_path: Path
) -> None:
    """A listed arch no binary holds, an arch outside the list and a binary holding none of it
    are each named."""
    wheel = _wheel_one_arch_per_binary(tmp_path, _sage(**binaries))
    problems = _problems_one_arch_per_binary(wheel, SOME, per_binary="some")
    assert any(problem in p for p in problems), problems


@FEW
@given(members=MEMBERS, data=st.data())
def test_verify_reads_any_wheel(
    scratch: Path, good_wheel: bytes, members: list[tuple[str, bytes, bytes]], data: st.DataObject
) -> None:
    """A generated zip or a damaged wheel under a farm wheel's name: a report, never a raise."""
    scratch.mkdir(parents=True, exist_ok=True)
    wheel = scratch / NAME
    wheel.write_bytes(data.draw(st.just(_make_zip(members)) | _mutated(good_wheel)))
    report = _outcome(lambda: verify_static(wheel, _want()))
    assert report.problems
