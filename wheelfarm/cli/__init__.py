"""The `wheelfarm` command: a thin argparse front over the library (wheelfarm.farm and the
layers below), one module per subcommand, each its parser (`configure`) beside its handler
(`execute`). Handlers parse, call one library function and print its result; only `main` turns
an error into a one-line message and its exit code. Progress goes through logging.

Each handler imports what it uses, inside `execute`: `wheelfarm index` of 100,000 wheels has to
fit in simple503's memory (the builder, GitHub and doctor modules would add about 16 MB), and
`wheelfarm --help` reads every command's parser without loading any of them."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import NoReturn

from wheelfarm import __version__
from wheelfarm.cli import (
    build,
    common,
    coverage,
    doctor,
    farm,
    gpu_check,
    index,
    install_cuda,
    msvc_env,
    pages_url,
    plan,
    pr,
    publish,
    request,
    serve,
    shard,
    toolkit,
    validate,
    verify,
    watch,
)
from wheelfarm.core.errors import UsageError, WheelfarmError
from wheelfarm.core.root import find_root

# the order `wheelfarm --help` lists them in
COMMANDS = (
    plan,
    validate,
    build,
    farm,
    verify,
    index,
    publish,
    coverage,
    serve,
    shard,
    toolkit,
    install_cuda,
    msvc_env,
    pages_url,
    gpu_check,
    watch,
    pr,
    request,
    doctor,
)
logger = logging.getLogger("wheelfarm")


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing usage and exiting, so a bad
    argument reads like every other error: one line, the exit code from the hierarchy."""

    def error(self, message: str) -> NoReturn:
        msg = f"{message} (see `{self.prog} --help`)"
        raise UsageError(msg)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="wheelfarm",
        description="Build CUDA wheels for every (CUDA, torch, Python, platform), publish them "
        "and index them for pip and uv.",
    )
    parser.add_argument("--version", action="version", version=f"wheelfarm {__version__}")
    common.add_verbosity(parser, 0)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.configure(sub)
    return parser


def _configure_logging(verbose: int, quiet: int) -> None:
    """Wheelfarm's loggers write plain lines to stderr: INFO by default, -v DEBUG, -q WARNING."""
    level = logging.INFO - 10 * verbose + 10 * quiet
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.handlers = [handler]
    logger.setLevel(max(logging.DEBUG, min(level, logging.ERROR)))
    logger.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse, dispatch, and turn a WheelfarmError into one line and its exit code."""
    command = "wheelfarm"
    try:
        args = _parser().parse_args(argv)
        command = f"wheelfarm {args.command}"
        _configure_logging(args.verbose, args.quiet)
        if args.root is not None:
            find_root(args.root)  # a wrong --root is refused by every command alike
        return int(args.handler(args))
    except WheelfarmError as exc:
        print(f"{command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
