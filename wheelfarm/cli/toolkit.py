"""`wheelfarm toolkit`: what the workflow scripts install for a CUDA tag."""

from __future__ import annotations

import argparse
import json

from wheelfarm.cli import common
from wheelfarm.core.errors import UsageError
from wheelfarm.core.platforms import NAMES


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub, "toolkit", execute, "Print what to install for a CUDA tag (toolkits.yaml)."
    )
    p.add_argument("cuda", help="e.g. cu130")
    p.add_argument("--platform", default="linux_x86_64", choices=NAMES)
    p.add_argument("--field", help="print one value (version, components, gcc_toolset, ...)")


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.matrix.toolkits import toolkit

    facts = toolkit(common.root(args), args.cuda, args.platform)
    if args.field:
        if args.field not in facts:
            msg = f"--field {args.field!r}: the toolkit has {', '.join(facts)}"
            raise UsageError(msg)
        print(facts[args.field])
    else:
        print(json.dumps(facts, indent=2))
    return 0
