"""doctor's import check: torch and the package's modules imported, then every binary its RECORD
lists (a wheel's, or an installed distribution's) loaded in a child process of its own, so a
namespace package that imports with a broken `.so`, or a binary that crashes the interpreter,
fails the check instead of passing it or killing doctor; a failure is decoded into the check
above it that failed (undefined c10 symbols, a missing libcudart, GLIBC, the driver...)."""

from __future__ import annotations

import re
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from wheelfarm.core import loadcheck
from wheelfarm.scripts.wheelfarm_install import Run

PROBE_SECONDS = 180  # the import check: torch and the extension, on a cold disk
# What an import failure says -> (the check that failed, what it means)
DECODE = (
    (re.compile(r"undefined symbol: _ZN(3c10|2at|5torch)"), "torch",
     "the extension was built for another torch: its C++ symbols are missing"),
    (re.compile(r"lib(cudart|cublas\w*|cusparse|cufft|nvrtc)\.so\.(\d+)"), "cuda",
     "the extension links a CUDA runtime library this torch does not bring"),
    (re.compile(r"GLIBC_(\d+\.\d+)' not found"), "platform",
     "the extension needs a newer glibc than this system has"),
    (re.compile(r"GLIBCXX_|CXXABI_"), "platform",
     "the extension needs a newer libstdc++ than this system has"),
    (re.compile(r"no kernel image is available"), "gpu",
     "the wheel has no SASS or PTX this GPU can run"),
    (re.compile(r"driver version is insufficient|found no NVIDIA driver", re.IGNORECASE), "driver",
     "the NVIDIA driver is missing or too old for this CUDA runtime"),
)  # fmt: skip


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    found: str
    needed: str
    fix: str = ""


def passed(name: str, found: str, needed: str) -> Check:
    return Check(name, ok=True, found=found, needed=needed)


def failed(name: str, found: str, needed: str, fix: str = "") -> Check:
    return Check(name, ok=False, found=found, needed=needed, fix=fix)


def decode(error: str) -> tuple[str, str] | None:
    """(check, meaning) of a known import failure."""
    for pattern, check, meaning in DECODE:
        if pattern.search(error):
            return check, meaning
    return None


@dataclass(frozen=True)
class Installed:
    """An installed distribution's binaries: the folder its RECORD paths are relative to (its
    site-packages) and the extension modules among them."""

    base: str
    members: tuple[str, ...]


def import_check(
    python: str,
    wheel: Path | None,
    modules: list[str],
    *,
    installed: Installed | None = None,
    run: Run | None = None,
) -> Check:
    """Import torch and the modules (from the wheel unpacked beside the interpreter's torch, or
    as installed), then load each extension module the wheel's RECORD holds (or the installed
    distribution's) in a child of its own: a namespace package imports with a broken binary,
    and a crash must fail the check, not doctor."""
    with tempfile.TemporaryDirectory(prefix="wheelfarm-doctor-") as tmp:
        env, base = None, ""
        members: list[str] = []
        if wheel is not None:
            with zipfile.ZipFile(wheel) as zf:
                zf.extractall(tmp)  # read_wheel has parsed it; zipfile keeps members inside tmp
            env, base = {"PYTHONPATH": tmp, "PATH": ""}, tmp
            members = loadcheck.extension_members(loadcheck.record_members(wheel))
        elif installed is not None:
            base, members = installed.base, list(installed.members)
        code = "import torch\n" + "".join(f"import {m}\n" for m in modules)
        problem = _child(python, ["-c", code], env, ", ".join(modules), run)
        for member in members:
            if problem is not None:
                break
            load = ["-c", loadcheck.LOAD_PROGRAM, "torch", base, member]
            problem = _child(python, load, env, f"loading {member}", run)
    if problem is not None:
        return problem
    loaded = f"; loaded {len(members)} binaries" if members else ""
    return passed("import", f"imported {', '.join(modules)}{loaded}", "import succeeds")


def _child(
    python: str, args: list[str], env: dict[str, str] | None, what: str, run: Run | None
) -> Check | None:
    """Run one import-check child; None when it succeeded, else the failed check naming what
    it died of (exception or signal)."""
    try:
        result = (run or subprocess.run)([python, *args], capture_output=True, text=True,
                                         timeout=PROBE_SECONDS, env=env, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return failed("import", f"{what}: {exc!r}", "import succeeds", "")
    if result.returncode == 0:
        return None
    why = loadcheck.died(result.returncode, result.stderr.splitlines())
    decoded = decode(result.stderr)
    fix = f"see the {decoded[0]} check: {decoded[1]}" if decoded else "read the error above"
    return failed("import", f"{what}: {why}"[:300], "import succeeds", fix)


def top_modules(wheel: Path) -> list[str]:
    """Top-level packages of a wheel, from its file list."""
    with zipfile.ZipFile(wheel) as zf:
        tops = {n.split("/", 1)[0] for n in zf.namelist() if "/" in n}
    return sorted(t for t in tops if not t.endswith((".dist-info", ".data", ".libs")))
