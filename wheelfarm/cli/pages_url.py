"""`wheelfarm pages-url`: the GitHub Pages URL the workflows link the index at."""

from __future__ import annotations

import argparse

from wheelfarm.cli import common


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(sub, "pages-url", execute, "Print the GitHub Pages URL of a repository.")
    common.add_repo(p)


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.github.pages import pages_url

    print(pages_url(args.repo))
    return 0
