"""`wheelfarm validate`: read the seven matrix files and packages/*.yaml through their schemas."""

from __future__ import annotations

import argparse
import sys

from wheelfarm.cli import common


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    common.add_command(
        sub, "validate", execute, "Check the matrix files and packages/*.yaml; report all problems."
    )


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.matrix.load import load_matrix
    from wheelfarm.matrix.model import unbuilt_platforms

    root = common.root(args)
    matrix = load_matrix(root)
    for package in matrix.packages:
        if warning := unbuilt_platforms(package):
            print(f"warning: {warning}", file=sys.stderr)
    print(
        f"ok: {len(matrix.packages)} packages, {len(matrix.releases)} torch releases "
        f"({root.path}, {root.origin})"
    )
    return 0
