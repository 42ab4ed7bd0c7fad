"""`wheelfarm install-cuda`: the exact toolkit toolkits.yaml names, from NVIDIA's archives."""

from __future__ import annotations

import argparse
from pathlib import Path

from wheelfarm.cli import common
from wheelfarm.core.platforms import NAMES, host_platform


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub,
        "install-cuda",
        execute,
        "Install a CUDA tag's toolkit from NVIDIA's redistributable archives; print CUDA_HOME.",
    )
    p.add_argument("cuda", help="e.g. cu130")
    p.add_argument("--platform", default=host_platform(), choices=NAMES)
    p.add_argument("--dest", type=Path, required=True, help="folder the toolkit goes under")
    p.add_argument("--cache", type=Path, default=None, help="downloads go to CACHE/downloads")
    common.add_timeout(p, 3600)  # a toolkit's archives are a few GB


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.builder.envs import default_cache
    from wheelfarm.builder.redist import install_toolkit

    downloads = (args.cache or default_cache()).resolve() / "downloads"
    root = common.root(args)
    deadline = common.deadline(args)
    home = install_toolkit(root, args.cuda, args.platform, args.dest.resolve(), downloads, deadline)
    print(home)
    return 0
