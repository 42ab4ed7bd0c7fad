"""verify's and doctor's import check load every extension module a wheel's RECORD holds, each
in a child of its own: a namespace package imports with its `.so` cut to 4 KB, and an extension
that crashes at load (bus error, segfault) fails the check instead of killing doctor. The
extensions are real, compiled here with gcc; this machine has no torch, so the wheel carries an
empty stand-in `torch` package for the check's `import torch`."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.integration.conftest import wheelfarm
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.doctor_import import import_check

pytestmark = pytest.mark.integration


EXT = str(sysconfig.get_config_var("EXT_SUFFIX"))


SOURCE = """\
#include <Python.h>
#include <signal.h>
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "_C", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__C(void) { CRASH; return PyModule_Create(&def); }
"""


def extension(tmp_path: Path, crash: str) -> bytes:
    """A real CPython extension `_C`, whose init runs `crash` (a C statement) first."""
    src = tmp_path / "ext.c"
    src.write_text(SOURCE.replace("CRASH", crash))
    out = tmp_path / f"_C{EXT}"
    include = sysconfig.get_paths()["include"]
    subprocess.run(["gcc", "-shared", "-fPIC", f"-I{include}", src, "-o", out], check=True)
    return out.read_bytes()


def namespace_wheel(tmp_path: Path, binary: bytes, tag: str = "cp3-none-linux_x86_64") -> Path:
    """nspkg (a namespace package: no __init__.py) with nspkg/ext/_C as its only binary."""
    wheel = tmp_path / f"nspkg-1.0-{tag}.whl"
    files = {
        f"nspkg/ext/_C{EXT}": binary,
        "torch/__init__.py": b"",
        "nspkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: nspkg\nVersion: 1.0\n",
        "nspkg-1.0.dist-info/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n".encode(),
    }
    write_wheel(wheel, files, "nspkg-1.0.dist-info")
    return wheel


@pytest.mark.skipif(sys.platform != "linux", reason="gcc-built ELF extension")
def test_a_namespace_package_passes_only_when_its_binary_loads(tmp_path: Path) -> None:
    good = extension(tmp_path, "(void)0")
    check = import_check(sys.executable, namespace_wheel(tmp_path, good), ["nspkg"])
    assert check.ok, check
    assert "loaded 1 binaries" in check.found
    cut = tmp_path / "cut"
    cut.mkdir()
    check = import_check(sys.executable, namespace_wheel(cut, good[:4096]), ["nspkg"])
    assert not check.ok
    assert check.found.startswith(f"loading nspkg/ext/_C{EXT}: "), check.found  # a bus error here


@pytest.mark.skipif(sys.platform != "linux", reason="gcc-built ELF extension")
def test_a_binary_that_crashes_at_load_is_a_fail_not_a_dead_doctor(tmp_path: Path) -> None:
    crash = extension(tmp_path, "raise(SIGBUS)")
    check = import_check(sys.executable, namespace_wheel(tmp_path, crash), ["nspkg"])
    assert not check.ok
    assert check.found == f"loading nspkg/ext/_C{EXT}: crashed: killed by SIGBUS (signal 7)"


@pytest.mark.skipif(sys.platform != "linux", reason="gcc-built ELF extension")
def test_doctor_loads_an_installed_packages_binaries_from_its_record(tmp_path: Path) -> None:
    """`wheelfarm doctor NAME` on what pip installed: the namespace package imports with its
    `.so` cut to 4 KB; loading the binary its RECORD lists fails the import check."""
    good = extension(tmp_path, "(void)0")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    py = venv / "bin" / "python"
    for binary, folder in ((good, "good"), (good[:4096], "cut")):
        (tmp_path / folder).mkdir()
        wheel = namespace_wheel(tmp_path / folder, binary, "py3-none-linux_x86_64")
        subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", wheel],
                       check=True, capture_output=True)  # fmt: skip
        subprocess.run([py, "-c", "import nspkg"], check=True)  # what `import` alone proved
        result = wheelfarm("doctor", "nspkg", "--python", py, check=False)
        (line,) = (x for x in result.stdout.splitlines() if x.split()[1:2] == ["import"])
        if folder == "good":
            assert line.startswith("pass") and "loaded 1 binaries" in line, result.stdout
        else:
            assert line.startswith("FAIL"), result.stdout
            assert f"loading nspkg/ext/_C{EXT}: " in line
