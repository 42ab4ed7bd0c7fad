"""`wheelfarm doctor`: why a wheel will or will not run here, seven checks."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from wheelfarm.cli import common


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub, "doctor", execute, "Say why a wheel will or will not run here (seven checks)."
    )
    p.add_argument("target", help="a wheel file, or the name of an installed package")
    p.add_argument(
        "--python",
        default=_default_python(),
        help="the interpreter to check (default: the active venv's, $VIRTUAL_ENV, else this one: "
        "run by uvx or pipx, give your environment's)",
    )
    p.add_argument(
        "--index",
        metavar="URL",
        help="check the wheel of package TARGET that a farm's index offers this interpreter, "
        "from its packages.json (the site root; nothing downloaded)",
    )
    p.add_argument(
        "--site",
        metavar="URL",
        help="the farm's site root, for the install commands of the fixes (--index implies it)",
    )
    common.add_timeout(p, 120)  # reading --index's packages.json


def _default_python() -> str:
    """The active venv's interpreter where one is active and is not doctor's own (uvx, pipx and
    an installed wheelfarm run doctor from an environment of their own), else this one."""
    venv = os.environ.get("VIRTUAL_ENV")
    if venv and Path(venv).resolve() != Path(sys.prefix).resolve():
        found = Path(venv, "Scripts" if os.name == "nt" else "bin", "python")
        for candidate in (found, found.with_suffix(".exe")):
            if candidate.is_file():
                return str(candidate)
    return sys.executable


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.doctor import diagnose, diagnose_index, diagnose_installed, report

    root = common.root(args)
    target = Path(args.target)
    if args.index:
        checks = diagnose_index(
            args.target, args.index, args.python, root, deadline=common.deadline(args)
        )
    elif target.suffix == ".whl":
        wheel = common.existing_path(target, "wheel")
        checks = diagnose(wheel, args.python, root, site=_site(args.site))
    else:
        checks = diagnose_installed(args.target, args.python, root, site=_site(args.site))
    print(report(checks))
    failed = [c.name for c in checks if not c.ok]
    print(f"{len(checks) - len(failed)} of {len(checks)} checks pass" + (
        f"; failing: {', '.join(failed)}" if failed else ": it will run here"))  # fmt: skip
    return 1 if failed else 0


def _site(url: str | None) -> str | None:
    return None if url is None else url.rstrip("/") + "/"
