"""`wheelfarm gpu-check`: the facts build.yml's gpu-check job reads (farm.yaml gpu_check)."""

from __future__ import annotations

import argparse
from pathlib import Path

from wheelfarm.cli import common
from wheelfarm.core.errors import UsageError


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub, "gpu-check", execute, "Print what the GPU check job reads (farm.yaml gpu_check)."
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--runner-label",
        action="store_true",
        help="the GPU runner's label, or nothing when the farm has no GPU check",
    )
    what.add_argument(
        "--facts",
        type=Path,
        metavar="WHEEL",
        help="'PYTHON PLATFORM checked|skipped BUILD_ID' of a wheel, from its build record: "
        "whether the GPU runner checks it, and the build verify checks it as",
    )
    what.add_argument(
        "--merge",
        nargs=2,
        type=Path,
        metavar=("CHECKED", "DIST"),
        help="put the kernel results of the GPU check's records (CHECKED) into the matching "
        "build records of DIST's artifact folders (publish.yml); a record of no build there is "
        "refused",
    )


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.core.record import BuildRecord, RecordError, path_for
    from wheelfarm.matrix.load import load_matrix

    if args.merge:
        from wheelfarm.builder.gpucheck import merge_kernels

        checked, dist = args.merge
        if checked.is_dir():
            print(f"{merge_kernels(checked, dist)} record(s) took the GPU check's result")
        return 0
    rule = load_matrix(common.root(args)).farm.gpu_check
    if args.runner_label:
        print(rule.runner if rule and rule.runner else "")
        return 0
    wheel = common.existing_path(args.facts, "wheel")
    try:
        built = BuildRecord.read(path_for(wheel))
    except RecordError as exc:
        msg = f"{wheel.name}: no build record to check it against ({exc})"
        raise UsageError(msg) from exc
    target = built.target
    checked = rule is not None and rule.runner is not None and target.platform in rule.platforms
    verdict = "checked" if checked else "skipped"
    print(f"{target.python} {target.platform} {verdict} {built.build_id}")
    return 0
