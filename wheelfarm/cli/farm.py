"""`wheelfarm farm`: the local farm, from this machine's toolchain to pip and uv commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from wheelfarm.cli import common


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub,
        "farm",
        execute,
        "The local farm: build what this machine can (the demo by "
        "default), index it into a local site and print the pip and uv commands.",
    )
    common.add_target_args(p)
    common.add_build_args(p)
    p.add_argument(
        "--store",
        type=Path,
        default=common.WHEELHOUSE,
        help=f"the local release store (a wheelhouse; default {common.WHEELHOUSE}/, as build's)",
    )
    p.add_argument("--site", type=Path, default=common.SITE, help="where the index is written")
    p.add_argument("--title", default="wheelfarm (local)")
    p.set_defaults(local=True)


def execute(args: argparse.Namespace) -> int:
    """The local farm: plan what this machine can build, build it, index it, print commands."""
    from wheelfarm.core.commands import UV_OUTSIDE_A_VENV, install_commands
    from wheelfarm.farm import choose_target, local_farm

    matrix, expansion = common.grid(args)
    target = choose_target(matrix, expansion, common.query(args))
    opts = common.build_options(args, local=True, out=args.store)
    result = local_farm(matrix, expansion, target, opts, site=args.site, title=args.title)
    build = target.build
    name = build.distribution
    name = target.package.display_name if name == target.package.name else name
    cuda = build.cuda
    torch = matrix.torch_index(cuda) if build.torch_minor else None
    commands = install_commands(name, f"{build.version}+{build.label}", result.index_url, torch)
    print(commands.pip)
    print(f"# {UV_OUTSIDE_A_VENV}")
    print(commands.uv)
    combo = result.index_url.rstrip("/").rsplit("/", 1)[-1]
    print(
        f"# or serve it: wheelfarm serve {args.site} --port 8000, then use "
        f"http://127.0.0.1:8000/{cuda}/{combo}/"
    )
    return 0
