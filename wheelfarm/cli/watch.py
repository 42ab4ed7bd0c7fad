"""`wheelfarm watch`: the torch.yaml change PyTorch's index and PyPI imply, and each package
file's change its own upstream release implies."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from wheelfarm.cli import common
from wheelfarm.core.errors import ConfigError

logger = logging.getLogger("wheelfarm")


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub,
        "watch",
        execute,
        "Work out the torch.yaml and package file changes upstream releases imply.",
    )
    p.add_argument("--torch-index", help="the PyTorch wheel index (default PyTorch's)")
    p.add_argument(
        "--pypi-index",
        metavar="URL",
        help="a PEP 691 index of torch's default variant and of the packages' sdists (default "
        "PyPI's; 'none' to skip both)",
    )
    common.add_timeout(p, 600)
    p.add_argument(
        "--write", action="store_true", help="write the change into torch.yaml and package files"
    )
    p.add_argument("--summary", type=Path, help="write a Markdown summary (changes, plan)")


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.watch import DEFAULT_INDEX, DEFAULT_PYPI, watch, write

    root = common.root(args)
    timeout = common.timeout(args)
    result = watch(
        root, args.torch_index or DEFAULT_INDEX, args.pypi_index or DEFAULT_PYPI, timeout
    )
    for fact in result.facts:
        print(fact, file=sys.stderr)
    if args.summary:
        args.summary.write_text(result.summary, encoding="utf-8")
    if args.write:
        for path in write(root, result):
            logger.info("wrote %s", path)
    up_to_date = "torch.yaml and the package files are up to date with their upstreams"
    print(result.diff or up_to_date, end="" if result.diff else "\n")
    if result.proposal.needs:
        raise ConfigError(result.proposal.needs)
    return 0
