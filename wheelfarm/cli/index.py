"""`wheelfarm index`: the PEP 503 site from a wheelhouse or from GitHub Releases."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from wheelfarm.cli import common
from wheelfarm.core.errors import SiteError
from wheelfarm.index.lock import LOCK_TIMEOUT

if TYPE_CHECKING:
    from wheelfarm.core.root import FarmRoot
    from wheelfarm.index.unchanged import SiteResult
    from wheelfarm.matrix.model import Matrix

SHOWN_UNFILED = 3  # wheel names printed per reason
SHOWN_COMMANDS = 10  # a local site's install commands printed
SERVED = "http://127.0.0.1:8000/"  # where `wheelfarm serve` serves it by default


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub, "index", execute, "Write the PEP 503 site from a wheelhouse or GitHub Releases."
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--wheelhouse",
        type=Path,
        help=f"a folder of wheels (+ .build.json); the default, {common.WHEELHOUSE}/ (build's and "
        "farm's), when no --github is given",
    )
    src.add_argument("--github", metavar="OWNER/REPO", help="read the repository's releases")
    common.add_api(p)
    common.add_timeout(p, 1200)
    p.add_argument("--out", type=Path, default=common.SITE)
    p.add_argument(
        "--allow-removal",
        action="store_true",
        help="let the new site drop wheels the previous one listed",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 7 when a wheel is in no (cuda, torch) index (the reasons are printed)",
    )
    p.add_argument("--title", default="wheelfarm")
    p.add_argument(
        "--lock-timeout",
        type=float,
        default=LOCK_TIMEOUT,
        metavar="SECONDS",
        help="how long to wait for another index run writing --out (it holds OUT.lock); then "
        f"exit 7 naming it (default {LOCK_TIMEOUT:g})",
    )


def execute(args: argparse.Namespace) -> int:
    shared = {
        "title": args.title,
        "allow_removal": args.allow_removal,
        "lock_timeout": args.lock_timeout,
    }
    if args.github is None:
        from wheelfarm.index.unchanged import input_key, reuse

        root = common.root(args)  # the matrix is loaded only when the site is written
        given = args.wheelhouse or common.WHEELHOUSE
        folder = common.existing_path(given, "--wheelhouse", folder=True)
        key = input_key(root, folder, args.title)
        reused = reuse(args.out, key)  # an unchanged site: the writer is not even imported
        if reused is None:
            from wheelfarm.core.forked import Forked

            loading = Forked(partial(_matrix, root))  # in a child, while the writer is imported
            from wheelfarm.index.write import index_root, load_grid

            grid = partial(load_grid, root, loading)
            reused = index_root(root, grid, folder, args.out, key=key, **shared)
        summary = reused
    else:
        from wheelfarm.farm import index_releases

        matrix, expansion = common.grid(args)
        github = common.client(args.github, args)
        summary = index_releases(matrix, expansion, github, args.out, **shared)
    _print_site(args.out, summary)
    if args.github is None:
        _print_commands(args.out)
    return SiteError.exit_code if args.strict and summary.unfiled else 0


def _matrix(root: FarmRoot) -> Matrix:
    """The farm's matrix, loaded (imported here: in the forked child, not in the parent)."""
    from wheelfarm.matrix.load import load_matrix

    return load_matrix(root)


def _print_site(out: Path, r: SiteResult) -> None:
    print(
        f"site {out}: {r.filed} of {r.wheels} wheels in {r.combos} (cuda, torch) "
        f"indexes; {r.written} files written, {r.unchanged} unchanged, "
        f"{len(r.removed)} removed"
    )
    if r.unfiled:
        print(f"{sum(map(len, r.unfiled.values()))} wheel(s) in no (cuda, torch) index:")
    for reason, names in sorted(r.unfiled.items(), key=lambda kv: -len(kv[1])):
        more = f" and {len(names) - SHOWN_UNFILED} more" if len(names) > SHOWN_UNFILED else ""
        print(f"  {len(names):>6}  {reason}: {', '.join(names[:SHOWN_UNFILED])}{more}")


def _print_commands(out: Path) -> None:
    """A local site's pinned install commands, as `wheelfarm serve` will serve it."""
    from wheelfarm.index.printed import site_commands

    commands, wheels = site_commands(out, SERVED, SHOWN_COMMANDS)
    if not commands:
        return
    print(f"install, once `wheelfarm serve {out}` serves it at {SERVED}:")
    for command in commands:
        print(f"  {command}")
    if wheels > len(commands):
        print(f"  ... and {wheels - len(commands)} more wheels: {out}/index.html lists them all")
