"""`wheelfarm verify`: a built wheel against its target, or against its own rebuild."""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING

from wheelfarm.cli import common
from wheelfarm.core.errors import UsageError, VerifyError

if TYPE_CHECKING:
    from wheelfarm.builder.gpucheck import CheckRun, Gpu
    from wheelfarm.builder.target import Target
    from wheelfarm.core.record import BuildRecord, KernelCheck
    from wheelfarm.farm import TargetQuery
    from wheelfarm.matrix.model import Matrix


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub, "verify", execute, "Check a built wheel against its target (static + import)."
    )
    p.add_argument("wheel", type=Path)
    common.add_target_args(p)
    p.add_argument("--no-import", action="store_true", help="skip the import check")
    p.add_argument("--cache", type=Path, default=None)
    p.add_argument(
        "--python-exe", help="the interpreter of the import check (default: found by version)"
    )
    p.add_argument(
        "--farm-wheels",
        help="where the import check finds the farm wheels a package imports (farm_requires): a "
        "wheelhouse folder or the farm's index URL (default: the wheel's folder)",
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="build the wheel's target again as its build record says, in a temporary folder, "
        "and compare: exit 0 when byte-identical, else 6 naming the members that differ "
        "(CCACHE_DISABLE=1 makes it a cold compile)",
    )
    p.add_argument(
        "--record", type=Path, help="with --rebuild: the build record (default WHEEL.build.json)"
    )
    kernels = p.add_mutually_exclusive_group()
    kernels.add_argument(
        "--gpu",
        action="store_true",
        help="also run the package's kernel check (checks/<package>.py) on this machine's GPU "
        "in the wheel's target env and write the result into its build record; exit 11 "
        "without a GPU, 6 when the check fails",
    )
    kernels.add_argument(
        "--cpu",
        action="store_true",
        help="also run the kernel check's CPU path (packages with CPU kernels), no GPU needed",
    )
    p.add_argument(
        "--runner",
        default="",
        help="with --gpu: the runner label recorded beside the result (farm.yaml gpu_check)",
    )


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.builder.build import verify_wheel
    from wheelfarm.builder.envs import PIP_INDEX, default_cache
    from wheelfarm.farm import choose_target

    wheel = common.existing_path(args.wheel, "wheel")
    if args.rebuild:
        return _rebuild(args, wheel)
    if args.record is not None:
        msg = "--record goes with --rebuild"
        raise UsageError(msg)
    device = "cuda" if args.gpu else "cpu" if args.cpu else None
    gpu = _kernel_preconditions(args, device)
    matrix, expansion = common.grid(args)
    built = _record_at_hand(wheel)
    query = _query(args, wheel, built, matrix)
    target = choose_target(matrix, expansion, query)
    if built is not None:
        if query.build_id and not query.archs and built.target.archs:
            target = _built_archs(target, built.target.archs)
        _agrees(wheel, target, built)
    local = query.build_id is None
    held = None if gpu is None else _unrunnable(wheel, target, built, gpu, args.runner)
    report = verify_wheel(
        wheel,
        target,
        cache=(args.cache or default_cache()).resolve(),
        index=args.torch_index or (PIP_INDEX if local else target.torch_index),
        python=args.python_exe,
        import_check=not args.no_import,
        farm_wheels=args.farm_wheels,
        kernels=device if held is None and _has_check(target) else None,
    )
    for binary, archs in report.archs.items():
        print(f"{binary}: SASS {' '.join(archs['cubins'])}; PTX {' '.join(archs['ptx']) or '-'}")
    print(f"ok: {wheel.name} matches {target.id}")
    if device is None:
        return 0
    return _kernels(wheel, target, report.kernels, gpu, held, args.runner)


def _kernel_preconditions(args: argparse.Namespace, device: str | None) -> Gpu | None:
    """For --gpu, the GPU it runs on (exit 11 in one line where there is none), before any
    environment is made; --runner and --no-import checked against the flags."""
    import tempfile

    from wheelfarm.builder import gpucheck

    if device is None:
        if args.runner:
            msg = "--runner names where --gpu ran: add --gpu, or drop --runner"
            raise UsageError(msg)
        return None
    if args.no_import:
        flag = "--gpu" if args.gpu else "--cpu"
        msg = f"{flag} runs the check in the import check's venv: drop --no-import"
        raise UsageError(msg)
    if device == "cpu":
        return None
    with tempfile.TemporaryDirectory(prefix="wheelfarm-gpu-") as scratch:
        gpu = gpucheck.find_gpu(Path(scratch) / "nvidia-smi.log")
    if gpu is None:
        raise gpucheck.no_gpu()
    return gpu


def _has_check(target: Target) -> bool:
    from wheelfarm.builder.gpucheck import has_check

    return has_check(target.root, target.package.name)


def _unrunnable(
    wheel: Path, target: Target, built: BuildRecord | None, gpu: Gpu, runner: str
) -> KernelCheck | None:
    """What --gpu records without running anything: no build record to write into (refused),
    a wheel this GPU runs none of, or a package with no check module; None: run the check."""
    from wheelfarm.builder import gpucheck
    from wheelfarm.core.digest import sha256_file

    if built is None or built.wheel.sha256 != sha256_file(wheel):
        msg = (
            f"--gpu writes its result into {wheel.name}'s build record, and none beside it is of "
            f"this wheel ({wheel.name}.build.json): verify the wheel its build wrote"
        )
        raise UsageError(msg)
    found = built.archs_found.values()
    cubins = {a for b in found for a in b.cubins}
    ptx = {a for b in found for a in b.ptx}
    if not gpucheck.carries_code_for(gpu, cubins, ptx):
        return gpucheck.unrunnable(gpu, cubins, ptx, runner=runner)
    if not _has_check(target):
        return gpucheck.unchecked(target.package.name, gpu, runner=runner)
    return None


def _kernels(
    wheel: Path,
    target: Target,
    ran: CheckRun | None,
    gpu: Gpu | None,
    held: KernelCheck | None,
    runner: str,
) -> int:
    """Print the check's ops and verdict; a GPU run's result goes into the build record."""
    from wheelfarm.builder import gpucheck
    from wheelfarm.core.record import path_for

    if gpu is None:
        return _cpu_path(wheel, target, ran)
    if held is None:
        if ran is None:  # verify_wheel runs the check whenever nothing holds it
            msg = "the kernel check did not run"
            raise VerifyError(wheel.name, [msg])
        _print_ops(ran)
        held = gpucheck.kernel_record(ran, gpu, runner=runner or None)
    gpucheck.write_kernels(path_for(wheel), held)
    where = f"{gpu.sm}, {gpu.name}, driver {gpu.driver}"
    if not held.passed:
        raise VerifyError(wheel.name, [f"its kernels failed on {where}: {held.failure}"])
    print(f"kernels ok: {wheel.name} on {where}; written to {path_for(wheel).name}")
    return 0


def _cpu_path(wheel: Path, target: Target, ran: CheckRun | None) -> int:
    """--cpu: the check's CPU path, or why there is none (exit 0: nothing to run)."""
    if ran is None:
        print(f"skipped: {target.package.name} has no kernel check (checks/)")
        return 0
    if ran.skipped:
        print(f"skipped: {target.package.name} has no CPU path: {ran.skipped}")
        return 0
    _print_ops(ran)
    if not ran.passed:
        raise VerifyError(wheel.name, [f"its kernels failed on the CPU: {ran.failure}"])
    print(f"kernels ok: {wheel.name} on the CPU")
    return 0


def _print_ops(ran: CheckRun) -> None:
    from wheelfarm.builder.gpucheck import describe

    for op in ran.ops:
        print(f"{'pass' if op.passed else 'FAIL'}  {op.name}: {describe(op)}")


def _record_at_hand(wheel: Path) -> BuildRecord | None:
    """The wheel's own build record: beside it, or in the default wheelhouse; None when
    neither has one (a wheel from elsewhere is checked against the flags alone)."""
    from wheelfarm.core.record import BuildRecord, path_for

    for path in (path_for(wheel), path_for(common.WHEELHOUSE / wheel.name)):
        if path.is_file():
            return BuildRecord.read(path)
    return None


def _query(
    args: argparse.Namespace, wheel: Path, built: BuildRecord | None, matrix: Matrix
) -> TargetQuery:
    """The flags' target, its gaps filled from the build record (what was built), or, for
    `--local` without `--package` and no record, the project from the wheel's name."""
    from packaging.utils import parse_wheel_filename

    from wheelfarm.core.label import torch_minor

    query = common.query(args)
    if built is not None and not query.build_id and (query.local or not query.package):
        t = built.target
        return dataclasses.replace(
            query,
            package=query.package or t.package,
            version=query.version or t.version,
            cuda=query.cuda or t.cuda,
            torch=query.torch or (t.torch and torch_minor(t.torch)),
            python=query.python or t.python,
            platform=query.platform or t.platform,
            archs=query.archs or t.archs,
        )
    if query.local and not query.package and not query.build_id:
        project = parse_wheel_filename(wheel.name)[0]
        return dataclasses.replace(query, package=_package_named(matrix, project))
    return query


def _package_named(matrix: Matrix, project: str) -> str:
    """The package whose wheels are named `project`: its name, or its per-CUDA `distribution`
    (spconv_cu130 is spconv's); the project itself when none is (the planner names it)."""
    from packaging.utils import canonicalize_name

    from wheelfarm.matrix.model import DIST_PLACEHOLDER

    for package in matrix.packages:
        pieces = (package.distribution or package.name).split(DIST_PLACEHOLDER)
        pattern = "cu[0-9]+".join(re.escape(canonicalize_name(p)) if p else "" for p in pieces)
        if re.fullmatch(pattern, project, re.IGNORECASE):
            return package.name
    return project


def _built_archs(target: Target, archs: str) -> Target:
    """A build id's target with the arch list its record says was built (a quick `--archs`
    build of the cell), not the policy's."""
    from wheelfarm.matrix.model import ArchList

    build = dataclasses.replace(target.build, archs=ArchList.parse(archs))
    return dataclasses.replace(target, build=build)


def _agrees(wheel: Path, target: Target, built: BuildRecord) -> None:
    """The target verified is what the record says was built: package, archs and ABI; a
    mismatch names both values."""
    b, t = target.build, built.target
    pairs = (("package", b.package, t.package), ("archs", b.archs.torch or None, t.archs),
             ("abi", b.abi, t.abi))  # fmt: skip
    problems = [
        f"{what}: the target is {ours!r}, the build record says {theirs!r}: pass the record's "
        f"value, or verify the wheel that was built for this target"
        for what, ours, theirs in pairs
        if ours != theirs
    ]
    if problems:
        raise VerifyError(wheel.name, problems)


def _rebuild(args: argparse.Namespace, wheel: Path) -> int:
    """The target and its options come from the wheel's build record, not from flags."""
    from wheelfarm.builder.envs import default_cache
    from wheelfarm.core.record import path_for
    from wheelfarm.farm import rebuild_and_compare

    chosen = common.target_flags_given(args)
    if chosen:
        msg = f"--rebuild takes the target from the wheel's build record: drop {chosen[0]}"
        raise UsageError(msg)
    if args.no_import:
        msg = "--rebuild runs the whole build, import check included: drop --no-import"
        raise UsageError(msg)
    record = args.record or path_for(wheel)
    what = "build record (pass --record PATH)" if args.record is None else "--record"
    common.existing_path(record, what)
    matrix, expansion = common.grid(args)
    cache = (args.cache or default_cache()).resolve()
    result = rebuild_and_compare(matrix, expansion, wheel, record, cache=cache)
    print(f"identical: {wheel.name} rebuilt from {result.build_id} (sha256 {result.sha256})")
    return 0
