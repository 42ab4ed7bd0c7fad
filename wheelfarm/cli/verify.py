"""`wheelfarm verify`: a built wheel against its target, or against its own rebuild."""

from __future__ import annotations

import argparse
from pathlib import Path

from wheelfarm.cli import common
from wheelfarm.core.errors import UsageError


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub, "verify", execute, "Check a built wheel against its target (static + import)."
    )
    p.add_argument("wheel", type=Path)
    common.add_target_args(p)
    p.add_argument("--no-import", action="store_true", help="skip the import check")
    p.add_argument("--cache", type=Path, default=None)
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
    matrix, expansion = common.grid(args)
    query = common.query(args)
    target = choose_target(matrix, expansion, query)
    local = query.build_id is None
    report = verify_wheel(
        wheel,
        target,
        cache=(args.cache or default_cache()).resolve(),
        index=args.torch_index or (PIP_INDEX if local else target.torch_index),
        import_check=not args.no_import,
        farm_wheels=args.farm_wheels,
    )
    for binary, archs in report.archs.items():
        print(f"{binary}: SASS {' '.join(archs['cubins'])}; PTX {' '.join(archs['ptx']) or '-'}")
    print(f"ok: {wheel.name} matches {target.id}")
    return 0


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
