"""The `wheelfarm` command: thin argparse front over the library. Only `main` prints errors and
chooses the exit code; everything below raises."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from wheelfarm import __version__
from wheelfarm.errors import WheelfarmError
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import MATRIX_DIR, load_matrix
from wheelfarm.matrix.plan import (
    Filters,
    existing_build_ids,
    explain,
    github_outputs,
    make_plan,
    table,
    to_json,
)

Handler = Callable[[argparse.Namespace], int]


def _split(values: list[str] | None) -> tuple[str, ...]:
    """`--cuda cu126,cu130 --cuda cu132` -> ('cu126', 'cu130', 'cu132')."""
    return tuple(v.strip() for item in values or [] for v in item.split(",") if v.strip())


def _add_filters(p: argparse.ArgumentParser) -> None:
    for axis, example in (("package", "flash-attn"), ("cuda", "cu130"), ("torch", "2.14"),
                          ("python", "3.12"), ("platform", "linux_x86_64")):
        p.add_argument(f"--{axis}", action="append", metavar="GLOB",
                       help=f"only cells whose {axis} matches (e.g. {example}); repeat or comma")


def _filters(args: argparse.Namespace) -> Filters:
    return Filters(package=_split(args.package), cuda=_split(args.cuda),
                   torch=_split(args.torch), python=_split(args.python),
                   platform=_split(args.platform))


def cmd_plan(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    matrix = load_matrix(args.matrix)
    expansion = expand(matrix)
    plan = make_plan(matrix, expansion, filters=_filters(args),
                     existing=existing_build_ids(args.existing), max_jobs=args.max_jobs)
    if args.explain:
        for cell in args.explain:
            print(explain(plan, cell))
        return 0
    if args.format == "github":
        outputs = github_outputs(plan, matrix)
        target = os.environ.get("GITHUB_OUTPUT")
        text = "".join(f"{k}={v}\n" for k, v in outputs.items())
        if target:
            with Path(target).open("a", encoding="utf-8") as fh:
                fh.write(text)
        print(text, end="")
    elif args.format == "json":
        print(json.dumps(to_json(plan, matrix), indent=2))
    else:
        print(table(plan))
        print(f"planned {len(expansion.cells)} cells -> {len(expansion.builds)} builds "
              f"in {time.perf_counter() - started:.2f}s")
    for w in plan.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix)
    print(f"ok: {len(matrix.packages)} packages, {len(matrix.releases)} torch releases")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wheelfarm", description=__doc__)
    parser.add_argument("--version", action="version", version=f"wheelfarm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, handler: Handler, text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=text, description=text)
        p.set_defaults(handler=handler)
        p.add_argument("--matrix", type=Path, default=MATRIX_DIR,
                       help="folder with torch.yaml, arch.yaml, farm.yaml and packages/")
        return p

    p = add("plan", cmd_plan, "Expand the matrix and plan the builds that are missing.")
    _add_filters(p)
    p.add_argument("--existing", type=Path,
                   help="packages.json of the published index, or a folder of wheels")
    p.add_argument("--max-jobs", type=int, help="jobs per shard (default farm.yaml, max 256)")
    p.add_argument("--format", choices=("table", "json", "github"), default="table")
    p.add_argument("--explain", action="append", metavar="CELL",
                   help="say why a cell id is built, covered, present or excluded")

    add("validate", cmd_validate, "Check every YAML file; report all problems at once.")
    for extra in _EXTRA_COMMANDS:
        extra(add)
    return parser


# Subcommands from other layers register here so this module stays a thin front.
_EXTRA_COMMANDS: list[Callable[[Callable[[str, Handler, str], argparse.ArgumentParser]], None]] = []


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: parse, dispatch, and turn a WheelfarmError into a message and exit code."""
    args = _parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except WheelfarmError as exc:
        print(f"wheelfarm {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
