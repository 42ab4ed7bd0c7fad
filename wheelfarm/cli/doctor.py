"""`wheelfarm doctor`: why a wheel will or will not run here, seven checks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wheelfarm.cli import common


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub, "doctor", execute, "Say why a wheel will or will not run here (seven checks)."
    )
    p.add_argument("target", help="a wheel file, or the name of an installed package")
    p.add_argument(
        "--python", default=sys.executable, help="the interpreter to check (default: this one)"
    )
    p.add_argument(
        "--index",
        metavar="URL",
        help="check the wheel of package TARGET that a farm's index offers this interpreter, "
        "from its packages.json (the site root; nothing downloaded)",
    )
    common.add_timeout(p, 120)  # reading --index's packages.json


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.doctor import diagnose, diagnose_index, diagnose_installed, report

    root = common.root(args)
    target = Path(args.target)
    if args.index:
        checks = diagnose_index(
            args.target, args.index, args.python, root, deadline=common.deadline(args)
        )
    elif target.suffix == ".whl":
        checks = diagnose(common.existing_path(target, "wheel"), args.python, root)
    else:
        checks = diagnose_installed(args.target, args.python, root)
    print(report(checks))
    failed = [c.name for c in checks if not c.ok]
    print(f"{len(checks) - len(failed)} of {len(checks)} checks pass" + (
        f"; failing: {', '.join(failed)}" if failed else ": it will run here"))  # fmt: skip
    return 1 if failed else 0
