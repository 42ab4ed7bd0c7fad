"""What several commands share: the flags every command takes (--root, -v/-q), the target and
build flag groups, the GitHub flags, and the small helpers that turn them into library values.
Only the standard library and light core modules are imported here, at the top: `wheelfarm
--help` reads every command's parser, and none of them may load the builder or the network."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from wheelfarm.core.errors import UsageError
from wheelfarm.core.root import FarmRoot, find_root

if TYPE_CHECKING:
    from wheelfarm.builder.build import BuildOptions
    from wheelfarm.builder.shard import Split
    from wheelfarm.core.http import Deadline
    from wheelfarm.farm import TargetQuery
    from wheelfarm.github.client import GitHubClient
    from wheelfarm.matrix.expand import Expansion
    from wheelfarm.matrix.model import Matrix
    from wheelfarm.matrix.plan import Filters

UPLOADS = os.environ.get("WHEELFARM_UPLOADS_URL", "https://uploads.github.com")
Handler = Callable[[argparse.Namespace], int]
Subparsers = argparse._SubParsersAction  # noqa: SLF001 - argparse names no public type for it


def add_command(
    sub: Subparsers[argparse.ArgumentParser], name: str, handler: Handler, text: str
) -> argparse.ArgumentParser:
    """A subcommand's parser, with the flags every command takes and its handler attached."""
    p = sub.add_parser(name, help=text, description=text)
    p.set_defaults(handler=handler)
    p.add_argument(
        "--root",
        type=Path,
        default=None,
        help="the farm root (the folder holding matrix/); default: the checkout around "
        "the current folder, else the installed package's own",
    )
    add_verbosity(p, argparse.SUPPRESS)
    return p


def add_verbosity(p: argparse.ArgumentParser, default: object) -> None:
    """-v/-q, on the top parser (counting from 0) and on each command (not resetting it)."""
    p.add_argument("-v", "--verbose", action="count", default=default, help="more output")
    p.add_argument("-q", "--quiet", action="count", default=default, help="less output")


def _split_list(values: list[str] | None) -> tuple[str, ...]:
    """`--cuda cu126,cu130 --cuda cu132` -> ('cu126', 'cu130', 'cu132')."""
    return tuple(v.strip() for item in values or [] for v in item.split(",") if v.strip())


def existing_path(path: Path, what: str, *, folder: bool = False) -> Path:
    """A path the user named, which must exist as a file (or folder)."""
    if not (path.is_dir() if folder else path.is_file()):
        kind = "folder" if folder else "file"
        msg = f"{what} {str(path)!r}: no such {kind}"
        raise UsageError(msg)
    return path


def root(args: argparse.Namespace) -> FarmRoot:
    return find_root(args.root)


def grid(args: argparse.Namespace) -> tuple[Matrix, Expansion]:
    """The root's matrix and its expansion, which most commands start from (kept between
    runs where WHEELFARM_GRID_CACHE names a folder: the Actions model's, matrix/gridcache.py)."""
    from wheelfarm.matrix.gridcache import grid_from_env

    return grid_from_env(root(args))


# The one default wheelhouse (build --local --out, farm --store, index --wheelhouse, verify's
# record search) and the one default site (farm --site, index --out, serve): docs/building.md.
WHEELHOUSE = Path("wheelhouse")
SITE = Path("site")

FILTER_AXES = (
    ("package", "flash-attn"),
    ("cuda", "cu130"),
    ("torch", "2.14"),
    ("python", "3.12"),
    ("platform", "linux_x86_64"),
    ("version", "2.8.3"),
)


def add_filters(p: argparse.ArgumentParser) -> None:
    for axis, example in FILTER_AXES:
        p.add_argument(
            f"--{axis}",
            action="append",
            metavar="GLOB",
            help=f"only cells whose {axis} matches (e.g. {example}); repeat or comma",
        )


def filters(args: argparse.Namespace) -> Filters:
    from wheelfarm.matrix.plan import Filters

    return Filters(
        package=_split_list(args.package),
        cuda=_split_list(args.cuda),
        torch=_split_list(args.torch),
        python=_split_list(args.python),
        platform=_split_list(args.platform),
        version=_split_list(args.version),
    )


def add_target_args(p: argparse.ArgumentParser) -> None:
    """The target flags of build, farm and verify: a build id, or --local and its overrides."""
    p.add_argument("target", nargs="?", help="a build id from `wheelfarm plan`")
    p.add_argument(
        "--local",
        action="store_true",
        help="build for this machine: its CUDA toolkit, this Python and platform, the "
        "newest torch for them, pip's own torch index",
    )
    p.add_argument("--package", help="with --local or flags: the package (default wheelfarm-demo)")
    p.add_argument(
        "--package-version", help="with --package: the version (default: the newest listed)"
    )
    p.add_argument("--cuda", help="CUDA tag, e.g. cu130 (default with --local: the toolkit's)")
    p.add_argument("--torch", help="torch minor, e.g. 2.14 (default: newest that fits)")
    p.add_argument("--python", help="Python version, e.g. 3.12 (default with --local: this one)")
    p.add_argument("--platform", help="farm platform (default with --local: this machine)")
    p.add_argument("--torch-index", help="torch index URL, or 'pip' for pip's configuration")
    p.add_argument("--archs", help="replace the arch list, e.g. '9.0' (a quick local build)")


def target_flags_given(args: argparse.Namespace) -> list[str]:
    """The target flags given, as the user spelled them (`verify --rebuild` refuses them)."""
    given = {
        "BUILD_ID": args.target,
        "--local": args.local,
        "--package": args.package,
        "--package-version": args.package_version,
        "--cuda": args.cuda,
        "--torch": args.torch,
        "--python": args.python,
        "--platform": args.platform,
        "--archs": args.archs,
        "--torch-index": args.torch_index,
    }
    return [flag for flag, value in given.items() if value]


def query(args: argparse.Namespace) -> TargetQuery:
    from wheelfarm.farm import TargetQuery

    return TargetQuery(
        build_id=args.target,
        local=args.local,
        package=args.package,
        version=args.package_version,
        cuda=args.cuda,
        torch=args.torch,
        python=args.python,
        platform=args.platform,
        archs=args.archs,
        torch_index=args.torch_index,
    )


def add_build_args(p: argparse.ArgumentParser) -> None:
    """The flags of build and farm that become BuildOptions (build_options below)."""
    p.add_argument(
        "--work",
        type=Path,
        default=Path(".wheelfarm/work"),
        help="scratch folder (kept on failure)",
    )
    p.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="torch envs, sdists, ccache (default $WHEELFARM_CACHE or ~/.cache/wheelfarm)",
    )
    p.add_argument("--sdist-index", help="PEP 503 index for sdists (default PyPI's)")
    p.add_argument("--plat", help="auditwheel --plat (default: farm.yaml's tag; 'auto' locally)")
    p.add_argument("--python-exe", help="interpreter to build with (default: found by version)")
    p.add_argument(
        "--farm-wheels",
        help="where the import check finds the farm wheels a package imports (farm_requires): a "
        "wheelhouse folder or the farm's index URL (default: the --out folder)",
    )
    # builder.source.FETCH_SECONDS; pip's installs keep pip's own timeouts, and --job-minutes
    add_timeout(p, 1800, "the source's download or git clone")


def build_options(
    args: argparse.Namespace,
    *,
    local: bool,
    out: Path,
    deadline: float | None = None,
    split: Split | None = None,
) -> BuildOptions:
    """add_build_args' flags as BuildOptions; `deadline` and `split` come from build's own."""
    from wheelfarm.builder.build import BuildOptions
    from wheelfarm.builder.envs import PIP_INDEX, default_cache
    from wheelfarm.builder.source import DEFAULT_SDIST_INDEX

    return BuildOptions(
        out_dir=out.resolve(),
        work_dir=args.work.resolve(),
        cache=(args.cache or default_cache()).resolve(),
        torch_index=args.torch_index or (PIP_INDEX if local else None),
        sdist_index=args.sdist_index or DEFAULT_SDIST_INDEX,
        plat=args.plat or ("auto" if local else None),
        python=args.python_exe,
        deadline=deadline,
        split=split,
        farm_wheels=args.farm_wheels,
        fetch_timeout=timeout(args),
    )


def add_api(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--api",
        default=os.environ.get("GITHUB_API_URL", "https://api.github.com"),
        help="GitHub API base URL (default $GITHUB_API_URL or GitHub's)",
    )


def add_timeout(
    p: argparse.ArgumentParser, default: float, covers: str = "the command's network work"
) -> None:
    """--timeout: the whole command's limit for network work (core.http.Deadline), on top of
    the per-request one, so a slow or dripping server cannot hold it."""

    def seconds(raw: str) -> float:
        value = float(raw)
        if not 0 < value < 10**7:  # about four months
            msg = f"{raw!r} is not a positive number of seconds"
            raise argparse.ArgumentTypeError(msg)
        return value

    p.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help=f"stop (exit 9) when {covers} outlasts this (default {default:g})",
    )
    p.set_defaults(timeout_default=default)


def timeout(args: argparse.Namespace) -> float:
    """--timeout's seconds, else the command's default (add_timeout keeps the two apart, so
    publish can tell a --timeout given from none)."""
    return float(args.timeout or args.timeout_default)


def deadline(args: argparse.Namespace) -> Deadline:
    """The command's overall network deadline, from now, for --timeout."""
    from wheelfarm.core.http import Deadline

    return Deadline.after(timeout(args), what="--timeout")


def add_repo(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--repo",
        default=os.environ.get("GITHUB_REPOSITORY"),
        required="GITHUB_REPOSITORY" not in os.environ,
        help="OWNER/REPO",
    )


def client(
    repo: str,
    args: argparse.Namespace,
    *,
    uploads: str = UPLOADS,
    deadline_minutes: float | None = None,
) -> GitHubClient:
    """The GitHub client for --api (and publish's --uploads), bounded by --timeout (the whole
    command; without it, --deadline-minutes when given, else the command's default) and
    publish's --deadline-minutes (its rate-limit waits, on GitHub's scaled clock)."""
    from wheelfarm.core.http import Deadline
    from wheelfarm.github.client import GitHubClient, time_scale

    scale = time_scale()
    limit, budget = deadline(args), None
    if deadline_minutes is not None:
        what = "--deadline-minutes"
        limit = Deadline.after(deadline_minutes * 60, what=what) if args.timeout is None else limit
        budget = Deadline.after(deadline_minutes * 60 / scale, what=what)
    return GitHubClient(
        repo, api=args.api, uploads=uploads, deadline=limit, budget=budget, scale=scale
    )
