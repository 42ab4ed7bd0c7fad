"""Tests of builder/symbols.py: a binary's imports looked up in what an environment exports.
The libraries are real ELF files the system C compiler linked (elfs/build.sh): a "runtime"
with a versioned symbol and a torch-named one, as libcudart and libc10 are."""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wheelfarm.builder.symbols import check, check_wheel, libraries, missing, read_symbols

ELFS = Path(__file__).parent / "elfs"  # linked by elfs/build.sh (elfs/README.md)
TORCH_NAMED = "_ZN3c105probeEv"  # c10::probe(), as a variant's libc10 would define it


@pytest.fixture(scope="module")
def binary() -> Path:
    """The extension: imports rt_alloc@RT_13.0 from libfakert.so.13 and c10::probe from libc10."""
    return ELFS / "ext.so"


def _site(folder: Path, runtime: str = "rt13", torch: str = "c10") -> Path:
    """A torch env's site-packages holding the given runtime and libc10 fixtures."""
    for sub, fixture in (("nvidia/lib", runtime), ("torch/lib", torch)):
        (folder / sub).mkdir(parents=True, exist_ok=True)
        for lib in (ELFS / fixture).iterdir():
            shutil.copy(lib, folder / sub / lib.name)
    return folder


def _problems(binary: Path, site: Path) -> list[str]:
    return check("pkg/ext.so", binary.read_bytes(), libraries(site), "torch 2.15.0+cu132")


def test_every_import_found_is_no_problem(binary: Path, tmp_path: Path) -> None:
    site = _site(tmp_path)
    symbols = read_symbols(io.BytesIO(binary.read_bytes()), binary.stat().st_size)
    assert {(i.name, i.version, i.library) for i in symbols.imports} >= {
        ("rt_alloc", "RT_13.0", "libfakert.so.13")
    }
    assert set(symbols.needed) >= {"libfakert.so.13", "libc10.so"}
    assert _problems(binary, site) == []


def test_a_versioned_symbol_the_variants_runtime_lacks_is_one_line_naming_it(
    binary: Path, tmp_path: Path
) -> None:
    site = _site(tmp_path, runtime="rt13-other")
    (line,) = _problems(binary, site)
    assert line.startswith("pkg/ext.so imports rt_alloc@RT_13.0, which libfakert.so.13 of")
    assert "torch 2.15.0+cu132" in line and "cuda_minor_code" in line


def test_the_same_name_under_another_version_is_missing(binary: Path, tmp_path: Path) -> None:
    site = _site(tmp_path, runtime="rt12")
    assert [line.split(",")[0] for line in _problems(binary, site)] == [
        "pkg/ext.so imports rt_alloc@RT_13.0"
    ]


def test_a_torch_symbol_no_needed_library_defines_is_missing(binary: Path, tmp_path: Path) -> None:
    site = _site(tmp_path, torch="c10-other")
    (line,) = _problems(binary, site)
    assert line.startswith(f"pkg/ext.so imports {TORCH_NAMED}, which ")


def test_libraries_the_environment_lacks_are_not_looked_up(binary: Path) -> None:
    """libc, the driver and the interpreter are not in a torch env: auditwheel's policy holds
    those, so an environment without libfakert checks nothing against it."""
    symbols = read_symbols(io.BytesIO(binary.read_bytes()), binary.stat().st_size)
    assert list(missing(symbols, {})) == []


def test_a_vendored_copy_in_the_wheel_is_the_wheels_own(binary: Path, tmp_path: Path) -> None:
    site = _site(tmp_path / "env", runtime="rt13-other", torch="c10-other")
    wheel = tmp_path / "pkg-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(binary, "pkg/ext.so")
        zf.writestr("pkg/__init__.py", "")
    assert len(check_wheel(wheel, site, "env")) == 2  # rt_alloc and c10::probe
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.write(
            tmp_path / "env" / "nvidia" / "lib" / "libfakert.so.13", "pkg.libs/libfakert.so.13"
        )
        zf.write(tmp_path / "env" / "torch" / "lib" / "libc10.so", "pkg.libs/libc10.so")
    # the wheel's own copies are not looked up in the env (and are checked as binaries too)
    assert all("libfakert.so.13 of env" not in p for p in check_wheel(wheel, site, "env"))


@settings(max_examples=300, deadline=None, database=None)
@given(data=st.data())
def test_hostile_bytes_are_one_line_never_a_traceback(binary: Path, data: st.DataObject) -> None:
    """Cut, flipped or random bytes after a real ELF's header: a list of lines, no exception."""
    real = binary.read_bytes()
    kind = data.draw(st.sampled_from(["cut", "flip", "random"]))
    if kind == "cut":
        blob = real[: data.draw(st.integers(4, len(real) - 1))]
    elif kind == "flip":
        at = data.draw(st.lists(st.integers(16, len(real) - 1), min_size=1, max_size=16))
        buf = bytearray(real)
        for i in at:
            buf[i] = data.draw(st.integers(0, 255))
        blob = bytes(buf)
    else:
        blob = data.draw(st.sampled_from([b"\x7fELF", b"MZ"])) + data.draw(st.binary(max_size=4096))
    lines = check("pkg/ext.so", blob, {}, "env")
    assert all(isinstance(line, str) and "\n" not in line for line in lines)
