"""Run a package's kernel check (checks/<package>.py) in the wheel's target environment and turn
what it reported into the build record's `kernels` (`wheelfarm verify --gpu`), or, on the CPU,
into a report of its CPU path (`wheelfarm verify --cpu`).

The check runs in a child process of the venv the import check made (the wheel, its torch,
its import_requires): a fixed program loads the root's checks/ folder as a package of its own
and hands the check's name to checks/_harness.py. The name is derived from the package, never
taken from YAML as code or a path. The child's result file is read as hostile data (size cap,
every field's type checked); a child that dies is a failed check naming its signal."""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from wheelfarm.builder import driver
from wheelfarm.core import jsonread, loadcheck
from wheelfarm.core.errors import BuildError, NoGpuError, ToolchainError
from wheelfarm.core.proc import CommandFailedError, Runner, call
from wheelfarm.core.record import BuildRecord, KernelCheck, KernelOp, RecordError
from wheelfarm.core.root import FarmRoot
from wheelfarm.scripts.wheelfarm_install import runs_any

MAX_RESULT = 1 << 20  # a check reports a few dozen ops
CHECK_MINUTES = 15  # a check takes seconds; a hung kernel must not hold a GPU runner for hours
# argv: the checks folder, then the harness's own: NAME DEVICE OUT
PROGRAM = """\
import importlib, importlib.util, os, sys
folder = sys.argv[1]
spec = importlib.util.spec_from_file_location(
    "_wheelfarm_checks", os.path.join(folder, "__init__.py"), submodule_search_locations=[folder]
)
package = importlib.util.module_from_spec(spec)
sys.modules["_wheelfarm_checks"] = package
spec.loader.exec_module(package)
sys.exit(importlib.import_module("_wheelfarm_checks._harness").main(sys.argv[2:]))
"""


def check_name(package: str) -> str:
    """The check module of a package: its normalized name with `_` for `-`.

    >>> check_name("torch-scatter"), check_name("flash_attn_3")
    ('torch_scatter', 'flash_attn_3')
    """
    return canonicalize_name(package).replace("-", "_")


def _checks_folder(root: FarmRoot) -> Path:
    return root.path / "checks"


def check_packages(root: FarmRoot) -> list[str]:
    """The check module names the root's checks/ folder holds (not its _harness and _reference)."""
    return sorted(p.stem for p in _checks_folder(root).glob("[!_]*.py"))


def has_check(root: FarmRoot, package: str) -> bool:
    return (_checks_folder(root) / f"{check_name(package)}.py").is_file()


@dataclass(frozen=True)
class Gpu:
    """The GPU a check runs on, as nvidia-smi names it."""

    name: str
    capability: tuple[int, int]
    driver: str

    @property
    def sm(self) -> str:
        return f"sm_{self.capability[0]}{self.capability[1]}"


def find_gpu(log: Path, run: Runner = call) -> Gpu | None:
    """The first GPU nvidia-smi lists, where the driver library loads; None on a machine
    without either (no check can run there)."""
    if not driver.driver_loads():
        return None
    query = ["nvidia-smi", "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"]
    try:
        out = run(query, log=log, capture=True)
    except (ToolchainError, CommandFailedError):
        return None
    return parse_gpu(out)


def parse_gpu(text: str) -> Gpu | None:
    r"""The first row of nvidia-smi's `name,compute_cap,driver_version` CSV; None for none.

    >>> parse_gpu("NVIDIA H100 80GB HBM3, 9.0, 580.65.06\\n")
    Gpu(name='NVIDIA H100 80GB HBM3', capability=(9, 0), driver='580.65.06')
    """
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 3:  # noqa: PLR2004 - name (which may hold commas), capability, driver
            continue
        major, _, minor = fields[-2].partition(".")
        if major.isdigit() and minor.isdigit():
            name = ", ".join(fields[:-2])[:200]
            return Gpu(name=name, capability=(int(major), int(minor)), driver=fields[-1][:40])
    return None


def carries_code_for(gpu: Gpu, cubins: set[str], ptx: set[str]) -> bool:
    """Whether the wheel's SASS or PTX runs on `gpu` (the install helper's rule); a wheel
    without device code (pycuda) runs anywhere."""
    return not (cubins or ptx) or runs_any(gpu.capability, cubins, ptx)


@dataclass(frozen=True, kw_only=True)
class _Reported:
    """The child's result file (checks/_harness.py `run`), as decoded."""

    check: str
    device: str
    reference: str = ""
    ops: tuple[KernelOp, ...] = ()
    error: str | None = None
    skipped: str | None = None


@dataclass(frozen=True, kw_only=True)
class CheckRun:
    """What one run of a package's check gave."""

    device: str
    reference: str
    ops: tuple[KernelOp, ...]
    error: str | None  # the check died or raised: its one line
    skipped: str | None = None  # a CPU run of a package without a CPU path: why

    @property
    def passed(self) -> bool:
        return self.error is None and bool(self.ops) and all(op.passed for op in self.ops)

    @property
    def failure(self) -> str | None:
        """The first thing that failed, in words; None when it passed."""
        if self.error is not None:
            return self.error
        for op in self.ops:
            if not op.passed:
                return f"{op.name}: {describe(op)}"
        return None if self.ops else "the check reported no op"

    @property
    def largest(self) -> KernelOp | None:
        """The compared op nearest its bound (the largest difference, relative to what it
        may be), or None when no op was compared with a number."""
        measured = [op for op in self.ops if op.value is not None and op.bound is not None]
        return max(measured, key=_share, default=None)


def _share(op: KernelOp) -> float:
    """How much of its bound an op used (an exact op, bound 0, uses none when it is exact)."""
    assert op.value is not None  # noqa: S101 - filtered by the caller
    assert op.bound is not None  # noqa: S101
    if op.bound > 0:
        return op.value / op.bound
    return 0.0 if op.value == 0 else math.inf


def describe(op: KernelOp) -> str:
    """One op's outcome: 'max abs 3.1e-04 (bound 2e-03)', 'ran', or its note."""
    if op.note:
        return op.note
    if op.value is None or op.bound is None:
        return "ran" if op.passed else "failed"
    return f"{op.metric} {op.value:.2g} (bound {op.bound:.2g})"


def run_check(
    py: Path,
    root: FarmRoot,
    package: str,
    device: str,
    *,
    env: dict[str, str],
    log: Path,
    run: Runner = call,
) -> CheckRun:
    """Run `package`'s check on `device` with the venv's Python `py`; a check that dies is a
    failed run naming what it died of."""
    name = check_name(package)
    with tempfile.TemporaryDirectory(dir=log.parent, prefix="kernel-check-") as scratch:
        out = Path(scratch) / "result.json"
        start = log.stat().st_size if log.exists() else 0
        args: list[str | Path] = [py, "-c", PROGRAM, _checks_folder(root), name, device, out]
        deadline = time.time() + CHECK_MINUTES * 60
        try:
            run(args, env=env, cwd=Path(scratch), log=log, deadline=deadline)
        except CommandFailedError as exc:
            with log.open("rb") as fh:
                fh.seek(start)
                lines = fh.read().decode("utf-8", "replace").splitlines()
            why = loadcheck.died(exc.returncode, lines)
            if time.time() >= deadline:
                why = f"did not finish within {CHECK_MINUTES} minutes (a hung kernel?)"
            return CheckRun(device=device, reference="", ops=(), error=why)
        return _read(out, device)


def _read(path: Path, device: str) -> CheckRun:
    """The child's result file; one that is missing or of the wrong shape is a failed run."""
    try:
        data = jsonread.loads(path.read_bytes(), what="the check's result", max_bytes=MAX_RESULT)
        got = jsonread.decode(_Reported, data, what="the check's result", extra_keys=True)
    except (OSError, ValueError) as exc:
        return CheckRun(device=device, reference="", ops=(), error=f"no result: {exc}")
    return CheckRun(
        device=device, reference=got.reference, ops=got.ops, error=got.error, skipped=got.skipped
    )


def no_gpu() -> NoGpuError:
    return NoGpuError(
        "no NVIDIA GPU here (libcuda.so.1 does not load, or nvidia-smi lists no GPU): verify "
        "--gpu runs kernels; run it on a machine with a GPU (farm.yaml gpu_check.runner), or "
        "use --cpu for the check's CPU path"
    )


def kernel_record(result: CheckRun, gpu: Gpu, *, runner: str | None) -> KernelCheck:
    """The build record's `kernels` for a GPU run."""
    largest = result.largest
    return KernelCheck(
        passed=result.passed,
        gpu=gpu.name,
        sm=gpu.sm,
        driver=gpu.driver,
        checked=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        runner=runner or None,
        reference=result.reference,
        largest=largest.value if largest else None,
        largest_op=largest.name if largest else None,
        failure=result.failure,
        ops=result.ops,
    )


def unrunnable(gpu: Gpu, cubins: set[str], ptx: set[str], *, runner: str | None) -> KernelCheck:
    """The record of a wheel this GPU runs none of: a check that could not prove it."""
    carried = " ".join(sorted(cubins | {f"{a} PTX" for a in ptx}))
    failure = (
        f"this GPU ({gpu.sm}, {gpu.name}) runs none of its code ({carried}): check it on a GPU "
        f"that runs it"
    )
    return kernel_record(
        CheckRun(device="cuda", reference="", ops=(), error=failure), gpu, runner=runner
    )


def unchecked(package: str, gpu: Gpu, *, runner: str | None) -> KernelCheck:
    """The record of a wheel whose package has no check module yet."""
    failure = (
        f"no kernel check for {package}: add checks/{check_name(package)}.py (docs/gpu-checks.md)"
    )
    return kernel_record(
        CheckRun(device="cuda", reference="", ops=(), error=failure), gpu, runner=runner
    )


def write_kernels(record_path: Path, kernels: KernelCheck) -> None:
    """Put `kernels` into the build record at `record_path` (read and checked first), written
    whole to a temporary file and moved over it, so a reader never sees half a record."""
    found = BuildRecord.read(record_path)
    text = dataclasses.replace(found, kernels=kernels).to_json()
    scratch = record_path.with_name(f".{record_path.name}.{os.getpid()}.tmp")
    scratch.write_text(text, encoding="utf-8")
    scratch.replace(record_path)


def merge_kernels(checked: Path, dist: Path) -> int:
    """Put the GPU check's results (the records in `checked`, build.yml's gpu-check artifacts)
    into the build records of `dist`'s artifact folders (publish.yml keeps each build's artifact
    in a folder of its own): only the `kernels` of a record whose build id and wheel (name,
    sha256, size) are the build's own; anything else is a BuildError naming it, before any
    record changes. How many records took a result."""
    own = {p.name: p for p in dist.glob("*/*.build.json")}
    pairs: list[tuple[Path, KernelCheck]] = []
    problems: list[str] = []
    for path in sorted(checked.glob("*.build.json")):
        found = own.get(path.name)
        stray = f"{path.name}: the GPU check's record is of no build of this batch"
        if found is None:
            problems.append(stray)
            continue
        try:
            ran = BuildRecord.read(path)
            built = BuildRecord.read(found)
        except RecordError as exc:
            problems.append(str(exc))
            continue
        if (built.build_id, built.wheel) != (ran.build_id, ran.wheel):
            problems.append(stray)
        elif ran.kernels is None:
            problems.append(f"{path.name}: the GPU check's record holds no kernel result")
        else:
            pairs.append((found, ran.kernels))
    if problems:
        msg = f"{len(problems)} GPU check record(s) refused: " + "; ".join(problems[:5])
        raise BuildError(msg)
    for found, kernels in pairs:
        write_kernels(found, kernels)
    return len(pairs)
