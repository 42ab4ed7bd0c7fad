"""`wheelfarm pr`: the one pull request from a branch (the daily watch workflow's)."""

from __future__ import annotations

import argparse
from pathlib import Path

from wheelfarm.cli import common


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(sub, "pr", execute, "Open or update the pull request from a branch.")
    common.add_repo(p)
    common.add_api(p)
    common.add_timeout(p, 120)
    p.add_argument("--head", required=True, help="the branch with the change")
    p.add_argument("--base", default="main")
    p.add_argument("--title", required=True)
    p.add_argument("--body-file", type=Path, required=True)


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.github.pulls import open_or_update

    body = common.existing_path(args.body_file, "--body-file").read_text(encoding="utf-8")
    github = common.client(args.repo, args)
    url = open_or_update(github, head=args.head, base=args.base, title=args.title, body=body)
    print(url)
    return 0
