"""The `wheelfarm` command: a thin argparse front over the library (wheelfarm.farm and the
layers below). Handlers parse, call one library function and print its result; only `main`
turns an error into a one-line message and its exit code. Progress goes through logging."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from wheelfarm import __version__
from wheelfarm.core.errors import (
    ConfigError,
    PublishError,
    SiteError,
    UsageError,
    WheelfarmError,
)
from wheelfarm.core.platforms import NAMES, host_platform
from wheelfarm.core.root import FarmRoot, find_root
from wheelfarm.index.lock import LOCK_TIMEOUT

if TYPE_CHECKING:
    from wheelfarm.builder.build import BuildOptions
    from wheelfarm.builder.shard import Split
    from wheelfarm.farm import TargetQuery
    from wheelfarm.github.client import GitHubClient
    from wheelfarm.index.site import SiteResult
    from wheelfarm.matrix.expand import Expansion
    from wheelfarm.matrix.model import Matrix
    from wheelfarm.matrix.plan import Filters

# Each handler imports what it uses: `wheelfarm index` of 100,000 wheels has to fit in
# simple503's memory, and the builder, GitHub and doctor modules would add about 16 MB.
UPLOADS = os.environ.get("WHEELFARM_UPLOADS_URL", "https://uploads.github.com")
Handler = Callable[[argparse.Namespace], int]
Add = Callable[[str, Handler, str], argparse.ArgumentParser]
logger = logging.getLogger("wheelfarm")


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing usage and exiting, so a bad
    argument reads like every other error: one line, the exit code from the hierarchy."""

    def error(self, message: str) -> NoReturn:
        msg = f"{message} (see `{self.prog} --help`)"
        raise UsageError(msg)


def _split(values: list[str] | None) -> tuple[str, ...]:
    """`--cuda cu126,cu130 --cuda cu132` -> ('cu126', 'cu130', 'cu132')."""
    return tuple(v.strip() for item in values or [] for v in item.split(",") if v.strip())


def _path(path: Path, what: str, *, folder: bool = False) -> Path:
    """A path the user named, which must exist as a file (or folder)."""
    if not (path.is_dir() if folder else path.is_file()):
        kind = "folder" if folder else "file"
        msg = f"{what} {str(path)!r}: no such {kind}"
        raise UsageError(msg)
    return path


def _root(args: argparse.Namespace) -> FarmRoot:
    return find_root(args.root)


def _grid(args: argparse.Namespace) -> tuple[Matrix, Expansion]:
    from wheelfarm.matrix.expand import expand
    from wheelfarm.matrix.load import load_matrix

    matrix = load_matrix(_root(args))
    return matrix, expand(matrix)


def _filters(args: argparse.Namespace) -> Filters:
    from wheelfarm.matrix.plan import Filters

    return Filters(
        package=_split(args.package),
        cuda=_split(args.cuda),
        torch=_split(args.torch),
        python=_split(args.python),
        platform=_split(args.platform),
    )


def _query(args: argparse.Namespace) -> TargetQuery:
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


def _build_options(args: argparse.Namespace, *, local: bool, out: Path) -> BuildOptions:
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
        deadline=_deadline(args),
        split=_split_build(args),
        farm_wheels=args.farm_wheels,
    )


def _split_build(args: argparse.Namespace) -> Split | None:
    """--shard I/K (one compile shard) or --link CACHE... (the link build of a split compile)."""
    from wheelfarm.builder.shard import Split

    shard, caches = getattr(args, "shard", None), getattr(args, "link", None)
    if shard is not None and caches is not None:
        msg = "--shard and --link exclude each other (a job compiles a shard or links)"
        raise UsageError(msg)
    if shard is not None:
        return Split.parse_shard(shard)
    return None if caches is None else Split.link(caches)


def _deadline(args: argparse.Namespace) -> float | None:
    """--job-started and --job-minutes, which come together, as the build's deadline."""
    from wheelfarm.farm import job_deadline

    started, minutes = getattr(args, "job_started", None), getattr(args, "job_minutes", None)
    if (started is None) != (minutes is None):
        msg = "--job-started and --job-minutes go together (the CI job's start and its limit)"
        raise UsageError(msg)
    return None if started is None or minutes is None else job_deadline(started, minutes)


def _client(repo: str, args: argparse.Namespace) -> GitHubClient:
    """The GitHub client for --api/--uploads, bounded by --timeout (the whole command; without
    it, --deadline-minutes when given, else the command's default) and --deadline-minutes (its
    rate-limit waits, on GitHub's scaled clock)."""
    from wheelfarm.core.http import Deadline
    from wheelfarm.github.client import GitHubClient

    client = GitHubClient(repo, api=args.api, uploads=getattr(args, "uploads", UPLOADS))
    minutes = getattr(args, "deadline_minutes", None)
    if args.timeout is not None:
        client.deadline = Deadline.after(args.timeout, what="--timeout")
    elif minutes is not None:
        client.deadline = Deadline.after(minutes * 60, what="--deadline-minutes")
    else:
        client.deadline = Deadline.after(args.timeout_default, what="--timeout")
    if minutes is not None:
        client.budget = Deadline.after(minutes * 60 / client.scale, what="--deadline-minutes")
    return client


def cmd_plan(args: argparse.Namespace) -> int:
    from wheelfarm.github.actions import github_outputs, plan_document, write_outputs
    from wheelfarm.github.releases import ReleasesSource
    from wheelfarm.matrix.plan import existing_build_ids, explain, make_plan, table, to_json

    started = time.perf_counter()
    matrix, expansion = _grid(args)
    if args.existing_releases:
        existing = ReleasesSource(_client(args.existing_releases, args)).build_ids()
    else:
        existing = existing_build_ids(args.existing)
    plan = make_plan(
        matrix, expansion, filters=_filters(args), existing=existing, max_jobs=args.max_jobs
    )
    if args.explain:
        for cell in args.explain:
            print(explain(plan, cell))
        return 0
    if args.format == "github":
        if args.plan_file is None:
            msg = "--format github needs --plan-file FILE: the shards' matrices go there (ADR 13)"
            raise UsageError(msg)
        farm = matrix.farm
        document = plan_document(plan, farm.hosted_job_limit_minutes, farm.publish_batch_wheels)
        args.plan_file.write_text(json.dumps(document, separators=(",", ":")), encoding="utf-8")
        outputs = github_outputs(plan)
        target = os.environ.get("GITHUB_OUTPUT")
        print(write_outputs(outputs, Path(target) if target else None), end="")
    elif args.format == "json":
        print(json.dumps(to_json(plan), indent=2))
    else:
        print(table(plan))
        print(
            f"planned {len(expansion.cells)} cells -> {len(expansion.builds)} builds "
            f"in {time.perf_counter() - started:.2f}s"
        )
    for w in plan.warnings:
        logger.warning("warning: %s", w)
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    from wheelfarm.builder.build import run_build, run_shard
    from wheelfarm.farm import choose_target

    matrix, expansion = _grid(args)
    query = _query(args)
    opts = _build_options(args, local=query.build_id is None, out=args.out)  # bad flags first
    target = choose_target(matrix, expansion, query)
    b = target.build
    logger.info(
        "building %s (archs %s, %s)",
        target.id,
        b.archs.torch or "none: no device code",
        f"torch {b.torch}" if b.torch else "no torch",
    )
    if opts.split is not None and opts.split.is_shard:
        shard = run_shard(target, opts)
        logger.info("compiled %s in %.1fs", shard.summary.name, sum(shard.durations.values()))
        print(shard.summary)
        return 0
    result = run_build(target, opts)
    total = sum(result.durations.values())
    logger.info("built %s in %.1fs; record %s", result.wheel, total, result.record.name)
    print(result.wheel)
    return 0


# what a build record fixes for --rebuild
_RECORDED_FLAGS = (
    "target",
    "local",
    "package",
    "package_version",
    "cuda",
    "torch",
    "python",
    "platform",
    "archs",
    "torch_index",
)


def _rebuild(args: argparse.Namespace, wheel: Path) -> int:
    """The target and its options come from the wheel's build record, not from flags."""
    from wheelfarm.builder.envs import default_cache
    from wheelfarm.core.record import path_for
    from wheelfarm.farm import rebuild_and_compare

    chosen = [f for f in _RECORDED_FLAGS if getattr(args, f)]
    if chosen:
        named = "BUILD_ID" if chosen[0] == "target" else f"--{chosen[0].replace('_', '-')}"
        msg = f"--rebuild takes the target from the wheel's build record: drop {named}"
        raise UsageError(msg)
    if args.no_import:
        msg = "--rebuild runs the whole build, import check included: drop --no-import"
        raise UsageError(msg)
    record = args.record or path_for(wheel)
    _path(record, "build record (pass --record PATH)" if args.record is None else "--record")
    matrix, expansion = _grid(args)
    cache = (args.cache or default_cache()).resolve()
    result = rebuild_and_compare(matrix, expansion, wheel, record, cache=cache)
    print(f"identical: {wheel.name} rebuilt from {result.build_id} (sha256 {result.sha256})")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from wheelfarm.builder.build import verify_wheel
    from wheelfarm.builder.envs import PIP_INDEX, default_cache
    from wheelfarm.farm import choose_target

    wheel = _path(args.wheel, "wheel")
    if args.rebuild:
        return _rebuild(args, wheel)
    if args.record is not None:
        msg = "--record goes with --rebuild"
        raise UsageError(msg)
    matrix, expansion = _grid(args)
    query = _query(args)
    target = choose_target(matrix, expansion, query)
    local = query.build_id is None
    report = verify_wheel(
        wheel,
        target,
        cache=(args.cache or default_cache()).resolve(),
        index=args.torch_index or (PIP_INDEX if local else target.torch_index),
        import_check=not args.no_import,
        farm_wheels=args.farm_wheels,
    )
    for binary, archs in report.archs.items():
        print(f"{binary}: SASS {' '.join(archs['cubins'])}; PTX {' '.join(archs['ptx']) or '-'}")
    print(f"ok: {wheel.name} matches {target.id}")
    return 0


SHOWN_UNFILED = 3  # wheel names printed per reason


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


def cmd_index(args: argparse.Namespace) -> int:
    matrix, expansion = _grid(args)
    common = {
        "title": args.title,
        "allow_removal": args.allow_removal,
        "lock_timeout": args.lock_timeout,
    }
    if args.wheelhouse is not None:
        from wheelfarm.index.write import index_wheelhouse

        folder = _path(args.wheelhouse, "--wheelhouse", folder=True)
        summary = index_wheelhouse(matrix, expansion, folder, args.out, **common)
    else:
        from wheelfarm.farm import index_releases

        summary = index_releases(matrix, expansion, _client(args.github, args), args.out, **common)
    _print_site(args.out, summary)
    return SiteError.exit_code if args.strict and summary.unfiled else 0


def cmd_serve(args: argparse.Namespace) -> int:
    from wheelfarm.index.serve import make_server

    _path(args.dir / "index.html", "site (build it with `wheelfarm index` first):")
    try:
        server = make_server(args.dir, args.bind, args.port)
    except OSError as exc:
        msg = f"cannot serve on {args.bind}:{args.port}: {exc.strerror or exc}; pick another --port"
        raise UsageError(msg) from exc
    print(f"serving {args.dir} at http://{args.bind}:{server.server_address[1]}/ (Ctrl-C stops)")
    sys.stdout.flush()
    with server:
        server.serve_forever()
    return 0


def cmd_farm(args: argparse.Namespace) -> int:
    """The local farm: plan what this machine can build, build it, index it, print commands."""
    from wheelfarm.farm import choose_target, local_farm

    matrix, expansion = _grid(args)
    target = choose_target(matrix, expansion, _query(args))
    opts = _build_options(args, local=True, out=args.store)
    result = local_farm(matrix, expansion, target, opts, site=args.site, title=args.title)
    name, cuda = target.package.display_name, target.build.cuda
    print(f"pip install {name} --extra-index-url {result.index_url}")
    print(f"uv pip install {name} --extra-index-url {result.index_url}")
    combo = result.index_url.rstrip("/").rsplit("/", 1)[-1]
    print(
        f"# or serve it: wheelfarm serve {args.site} --port 8000, then use "
        f"http://127.0.0.1:8000/{cuda}/{combo}/"
    )
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from wheelfarm.farm import check_artifacts, publish_wheels

    folder = _path(args.wheelhouse, "wheelhouse", folder=True)
    wheels = sorted(folder.glob("*.whl"))
    if not wheels:
        msg = f"no wheels in {str(folder)!r}: nothing to publish"
        raise UsageError(msg)
    matrix, expansion = _grid(args)
    if args.verify_only:
        check_artifacts(matrix, expansion, wheels)
        print(f"ok: {len(wheels)} artifacts are planned builds and pass verify")
        return 0
    from wheelfarm.github.publish import expected_build_ids

    expect = None if args.expect is None else expected_build_ids(args.expect)
    report = publish_wheels(matrix, expansion, wheels, _client(args.repo, args), expect)
    releases = ", ".join(sorted(report.releases)) or "-"
    print(
        f"published {len(wheels) - len(report.left)} of {len(wheels)} wheels: "
        f"{len(report.uploaded)} files uploaded, {len(report.skipped)} already there, "
        f"releases: {releases}"
    )
    failure = report.failure(len(wheels))
    if failure:
        raise PublishError(failure)
    return 0


def cmd_coverage(args: argparse.Namespace) -> int:
    from wheelfarm.index.coverage import coverage, markdown, write_docs
    from wheelfarm.matrix.plan import existing_build_ids

    matrix, expansion = _grid(args)
    rows = coverage(expansion, existing_build_ids(args.existing))
    if args.write_docs:
        for path in write_docs(rows, matrix.root):
            logger.info("wrote %s", path)
    print(markdown(rows), end="")
    return 0


def cmd_toolkit(args: argparse.Namespace) -> int:
    from wheelfarm.matrix.toolkits import toolkit

    facts = toolkit(_root(args), args.cuda, args.platform)
    if args.field:
        if args.field not in facts:
            msg = f"--field {args.field!r}: the toolkit has {', '.join(facts)}"
            raise UsageError(msg)
        print(facts[args.field])
    else:
        print(json.dumps(facts, indent=2))
    return 0


def cmd_install_cuda(args: argparse.Namespace) -> int:
    from wheelfarm.builder.envs import default_cache
    from wheelfarm.builder.redist import install_toolkit

    downloads = (args.cache or default_cache()).resolve() / "downloads"
    print(install_toolkit(_root(args), args.cuda, args.platform, args.dest.resolve(), downloads))
    return 0


def cmd_shard(args: argparse.Namespace) -> int:
    from wheelfarm.github.actions import expected, read_plan, shard_outputs, write_outputs

    document = read_plan(args.plan_file)
    if args.expect is not None:
        wanted = expected(document, args.name, args.batch)
        args.expect.write_text(json.dumps(wanted), encoding="utf-8")
        print(f"{len(wanted['include'])} builds to publish from shard {args.name}")
        return 0
    target = os.environ.get("GITHUB_OUTPUT")
    outputs = shard_outputs(document, args.name)
    write_outputs(outputs, Path(target) if target else None)
    print(f"shard {args.name}: {outputs['count']} jobs on {outputs['runner']}")
    return 0


def cmd_pages_url(args: argparse.Namespace) -> int:
    from wheelfarm.github.pages import pages_url

    print(pages_url(args.repo))
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    from wheelfarm.watch import DEFAULT_INDEX, DEFAULT_PYPI, watch, write

    root = _root(args)
    timeout = args.timeout or args.timeout_default
    result = watch(
        root, args.torch_index or DEFAULT_INDEX, args.pypi_index or DEFAULT_PYPI, timeout
    )
    for fact in result.facts:
        print(fact, file=sys.stderr)
    if args.summary:
        args.summary.write_text(result.summary, encoding="utf-8")
    if args.write and result.proposal.changed:
        logger.info("wrote %s", write(root, result))
    print(result.diff or "torch.yaml is up to date with the index", end="" if result.diff else "\n")
    if result.proposal.needs:
        raise ConfigError(result.proposal.needs)
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from wheelfarm.doctor import diagnose, diagnose_index, diagnose_installed, report

    root = _root(args)
    target = Path(args.target)
    if args.index:
        from wheelfarm.core.http import Deadline

        deadline = Deadline.after(args.timeout or args.timeout_default, what="--timeout")
        checks = diagnose_index(args.target, args.index, args.python, root, deadline=deadline)
    elif target.suffix == ".whl":
        checks = diagnose(_path(target, "wheel"), args.python, root)
    else:
        checks = diagnose_installed(args.target, args.python, root)
    print(report(checks))
    failed = [c.name for c in checks if not c.ok]
    print(f"{len(checks) - len(failed)} of {len(checks)} checks pass" + (
        f"; failing: {', '.join(failed)}" if failed else ": it will run here"))  # fmt: skip
    return 1 if failed else 0


def cmd_pr(args: argparse.Namespace) -> int:
    from wheelfarm.github.pulls import open_or_update

    body = _path(args.body_file, "--body-file").read_text(encoding="utf-8")
    url = open_or_update(
        _client(args.repo, args), head=args.head, base=args.base, title=args.title, body=body
    )
    print(url)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from wheelfarm.matrix.load import load_matrix

    root = _root(args)
    matrix = load_matrix(root)
    print(
        f"ok: {len(matrix.packages)} packages, {len(matrix.releases)} torch releases "
        f"({root.path}, {root.origin})"
    )
    return 0


def _add_filters(p: argparse.ArgumentParser) -> None:
    for axis, example in (
        ("package", "flash-attn"),
        ("cuda", "cu130"),
        ("torch", "2.14"),
        ("python", "3.12"),
        ("platform", "linux_x86_64"),
    ):
        p.add_argument(
            f"--{axis}",
            action="append",
            metavar="GLOB",
            help=f"only cells whose {axis} matches (e.g. {example}); repeat or comma",
        )


def _add_target_args(p: argparse.ArgumentParser) -> None:
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


def _add_build_args(p: argparse.ArgumentParser) -> None:
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


def _add_api(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--api",
        default=os.environ.get("GITHUB_API_URL", "https://api.github.com"),
        help="GitHub API base URL (default $GITHUB_API_URL or GitHub's)",
    )


def _add_timeout(p: argparse.ArgumentParser, default: float) -> None:
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
        help=f"stop (exit 9) when the command's network work outlasts this (default {default:g})",
    )
    p.set_defaults(timeout_default=default)


def _add_repo(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--repo",
        default=os.environ.get("GITHUB_REPOSITORY"),
        required="GITHUB_REPOSITORY" not in os.environ,
        help="OWNER/REPO",
    )


def _matrix_commands(add: Add) -> None:
    """plan, validate: read the YAML."""
    p = add("plan", cmd_plan, "Expand the matrix and plan the builds that are missing.")
    _add_filters(p)
    existing = p.add_mutually_exclusive_group()
    existing.add_argument(
        "--existing", type=Path, help="packages.json of an index, or a folder of wheels"
    )
    existing.add_argument(
        "--existing-releases",
        metavar="OWNER/REPO",
        help="what the repository's Releases hold (the farm's source of truth)",
    )
    _add_api(p)
    _add_timeout(p, 600)
    p.add_argument("--max-jobs", type=int, help="jobs per shard (default farm.yaml, max 256)")
    p.add_argument("--format", choices=("table", "json", "github"), default="table")
    p.add_argument(
        "--plan-file",
        type=Path,
        help="with --format github: write the plan (each shard's matrices) to this file",
    )
    p.add_argument(
        "--explain",
        action="append",
        metavar="CELL",
        help="say why a cell id is built, covered, present or excluded",
    )
    add("validate", cmd_validate, "Check every YAML file; report all problems at once.")


def _build_commands(add: Add) -> None:
    """build, farm, verify: make and check wheels."""
    p = add("build", cmd_build, "Compile, relabel, repair and verify one target.")
    _add_target_args(p)
    _add_build_args(p)
    p.add_argument("--out", type=Path, default=Path("wheelhouse"), help="where wheels go")
    p.add_argument(
        "--job-started",
        type=float,
        metavar="EPOCH",
        help="when the CI job started (date +%%s); with --job-minutes the compile stops in time "
        "for the job to save its compiler cache",
    )
    p.add_argument("--job-minutes", type=int, metavar="N", help="the CI job's time limit")
    p.add_argument(
        "--shard",
        metavar="I/K",
        help="compile only shard I of K of a split build's objects into the compiler cache "
        "(no wheel; docs/adr/0011-split-compile.md)",
    )
    p.add_argument(
        "--link",
        nargs="+",
        type=Path,
        metavar="CACHE",
        help="the link build of a split compile: merge the shards' ccache folders, build, fail "
        "below 99%% cache hits",
    )

    p = add(
        "farm",
        cmd_farm,
        "The local farm: build what this machine can (the demo by "
        "default), index it into a local site and print the pip and uv commands.",
    )
    _add_target_args(p)
    _add_build_args(p)
    p.add_argument(
        "--store",
        type=Path,
        default=Path(".wheelfarm/wheelhouse"),
        help="the local release store (a wheelhouse)",
    )
    p.add_argument("--site", type=Path, default=Path("site"), help="where the index is written")
    p.add_argument("--title", default="wheelfarm (local)")
    p.set_defaults(local=True)

    p = add("verify", cmd_verify, "Check a built wheel against its target (static + import).")
    p.add_argument("wheel", type=Path)
    _add_target_args(p)
    p.add_argument("--no-import", action="store_true", help="skip the import check")
    p.add_argument("--cache", type=Path, default=None)
    p.add_argument(
        "--farm-wheels",
        help="where the import check finds the farm wheels a package imports (farm_requires): a "
        "wheelhouse folder or the farm's index URL (default: the wheel's folder)",
    )
    p.add_argument(
        "--rebuild",
        action="store_true",
        help="build the wheel's target again as its build record says, in a temporary folder, "
        "and compare: exit 0 when byte-identical, else 6 naming the members that differ "
        "(CCACHE_DISABLE=1 makes it a cold compile)",
    )
    p.add_argument(
        "--record", type=Path, help="with --rebuild: the build record (default WHEEL.build.json)"
    )


def _site_commands(add: Add) -> None:
    """index, publish, coverage, serve: the farm's outputs."""
    p = add("index", cmd_index, "Write the PEP 503 site from a wheelhouse or GitHub Releases.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--wheelhouse", type=Path, help="a folder of wheels (+ .build.json)")
    src.add_argument("--github", metavar="OWNER/REPO", help="read the repository's releases")
    _add_api(p)
    _add_timeout(p, 1200)
    p.add_argument("--out", type=Path, default=Path("site"))
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

    p = add(
        "publish",
        cmd_publish,
        "Upload wheels, .metadata and build records to GitHub Releases; never overwrite.",
    )
    p.add_argument("wheelhouse", type=Path)
    _add_repo(p)
    _add_api(p)
    p.add_argument(
        "--uploads",
        default=UPLOADS,
        help="upload URL base (default $WHEELFARM_UPLOADS_URL or GitHub's)",
    )
    p.add_argument(
        "--deadline-minutes",
        type=float,
        help="stop (exit 8, naming what is left for a rerun) rather than wait for a rate limit "
        "past this many minutes from now; without --timeout, also the whole command's limit",
    )
    _add_timeout(p, 3600)
    p.add_argument(
        "--expect",
        type=Path,
        metavar="FILE",
        help="the shard the plan made (JSON with `name` and `include`): exit 8 naming every "
        "planned build that has no wheel here and is not published yet",
    )
    p.add_argument(
        "--verify-only",
        action="store_true",
        help="check every artifact (a planned build, its record's hash, static verify); upload "
        "nothing",
    )

    p = add("coverage", cmd_coverage, "Built / missing wheels per package and platform.")
    p.add_argument("--existing", type=Path, help="packages.json of the index, or a wheelhouse")
    p.add_argument(
        "--write-docs",
        action="store_true",
        help="rewrite the farm root's docs/coverage.md and README table",
    )

    p = add("serve", cmd_serve, "Serve a built site over HTTP for local use.")
    p.add_argument("dir", type=Path, nargs="?", default=Path("site"))
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--bind", default="127.0.0.1")


def _doctor_command(add: Add) -> None:
    p = add("doctor", cmd_doctor, "Say why a wheel will or will not run here (seven checks).")
    p.add_argument("target", help="a wheel file, or the name of an installed package")
    p.add_argument(
        "--python", default=sys.executable, help="the interpreter to check (default: this one)"
    )
    p.add_argument(
        "--index",
        metavar="URL",
        help="check the wheel of package TARGET that a farm's index offers this interpreter, "
        "from its packages.json (the site root; nothing downloaded)",
    )
    _add_timeout(p, 120)  # reading --index's packages.json


def _watch_commands(add: Add) -> None:
    """watch, pr: a torch release becomes a pull request."""
    p = add("watch", cmd_watch, "Work out the torch.yaml change a torch index implies.")
    p.add_argument("--torch-index", help="the PyTorch wheel index (default PyTorch's)")
    p.add_argument(
        "--pypi-index",
        metavar="URL",
        help="a PEP 691 index of torch's default variant (default PyPI's; 'none' to skip it)",
    )
    _add_timeout(p, 600)
    p.add_argument("--dry-run", action="store_true", help="print the diff only (the default)")
    p.add_argument("--write", action="store_true", help="write the change into torch.yaml")
    p.add_argument("--summary", type=Path, help="write a Markdown summary (changes, plan)")

    p = add("pr", cmd_pr, "Open or update the pull request from a branch.")
    _add_repo(p)
    _add_api(p)
    _add_timeout(p, 120)
    p.add_argument("--head", required=True, help="the branch with the change")
    p.add_argument("--base", default="main")
    p.add_argument("--title", required=True)
    p.add_argument("--body-file", type=Path, required=True)


def _workflow_commands(add: Add) -> None:
    """toolkit, pages-url, shard: facts the workflow scripts read."""
    p = add("shard", cmd_shard, "Write one shard's matrices (or a publish batch) from a plan file.")
    p.add_argument("name", help="the shard's name, e.g. linux_x86_64-1of9")
    p.add_argument("--plan-file", type=Path, required=True, help="the plan job's artifact")
    p.add_argument("--batch", type=int, help="one publish batch of the shard")
    p.add_argument(
        "--expect", type=Path, help="write what the batch must publish (for publish --expect)"
    )

    p = add("toolkit", cmd_toolkit, "Print what to install for a CUDA tag (toolkits.yaml).")
    p.add_argument("cuda", help="e.g. cu130")
    p.add_argument("--platform", default="linux_x86_64", choices=NAMES)
    p.add_argument("--field", help="print one value (version, components, gcc_toolset, ...)")

    p = add(
        "install-cuda",
        cmd_install_cuda,
        "Install a CUDA tag's toolkit from NVIDIA's redistributable archives; print CUDA_HOME.",
    )
    p.add_argument("cuda", help="e.g. cu130")
    p.add_argument("--platform", default=host_platform(), choices=NAMES)
    p.add_argument("--dest", type=Path, required=True, help="folder the toolkit goes under")
    p.add_argument("--cache", type=Path, default=None, help="downloads go to CACHE/downloads")

    p = add("pages-url", cmd_pages_url, "Print the GitHub Pages URL of a repository.")
    _add_repo(p)


def _verbosity(p: argparse.ArgumentParser, default: object) -> None:
    p.add_argument("-v", "--verbose", action="count", default=default, help="more output")
    p.add_argument("-q", "--quiet", action="count", default=default, help="less output")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="wheelfarm",
        description="Build CUDA wheels for every (CUDA, torch, Python, platform), publish them "
        "and index them for pip and uv.",
    )
    parser.add_argument("--version", action="version", version=f"wheelfarm {__version__}")
    _verbosity(parser, 0)
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, handler: Handler, text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=text, description=text)
        p.set_defaults(handler=handler)
        p.add_argument(
            "--root",
            type=Path,
            default=None,
            help="the farm root (the folder holding matrix/); default: the checkout around "
            "the current folder, else the installed package's own",
        )
        _verbosity(p, argparse.SUPPRESS)
        return p

    _matrix_commands(add)
    _build_commands(add)
    _site_commands(add)
    _workflow_commands(add)
    _watch_commands(add)
    _doctor_command(add)
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
        if getattr(args, "root", None) is not None:
            find_root(args.root)  # a wrong --root is refused by every command alike
        return int(args.handler(args))
    except WheelfarmError as exc:
        print(f"{command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
