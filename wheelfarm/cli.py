"""The `wheelfarm` command: thin argparse front over the library. Only `main` prints errors and
chooses the exit code; everything below raises."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from packaging.version import Version

from wheelfarm import __version__
from wheelfarm.builder.build import BuildOptions, run_build, verify_wheel
from wheelfarm.builder.envs import PIP_INDEX, default_cache
from wheelfarm.builder.source import DEFAULT_SDIST_INDEX
from wheelfarm.builder.target import Target, host_platform_name, resolve, select
from wheelfarm.builder.toolchain import installed_cuda_tag
from wheelfarm.errors import (
    PlanError,
    PublishError,
    SiteError,
    WheelfarmError,
)
from wheelfarm.index.coverage import coverage, markdown, svg, write_docs
from wheelfarm.index.entries import WheelEntry
from wheelfarm.index.publish import GitHubPublisher, publish
from wheelfarm.index.serve import make_server
from wheelfarm.index.site import build_site, read_manifest
from wheelfarm.index.sources import GitHubReleases, from_wheelhouse, yanked_versions
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import MATRIX_DIR, load_matrix
from wheelfarm.matrix.model import PLATFORMS, ArchList, Matrix
from wheelfarm.matrix.plan import (
    Filters,
    existing_build_ids,
    explain,
    github_outputs,
    make_plan,
    table,
    to_json,
)
from wheelfarm.matrix.toolkits import pages_url, toolkit
from wheelfarm.matrix.wheelname import build_id_from_wheel

Handler = Callable[[argparse.Namespace], int]
Add = Callable[[str, Handler, str], argparse.ArgumentParser]
DEMO_PACKAGE = "wheelfarm-demo"


def _split(values: list[str] | None) -> tuple[str, ...]:
    """`--cuda cu126,cu130 --cuda cu132` -> ('cu126', 'cu130', 'cu132')."""
    return tuple(v.strip() for item in values or [] for v in item.split(",") if v.strip())


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


def _filters(args: argparse.Namespace) -> Filters:
    return Filters(
        package=_split(args.package),
        cuda=_split(args.cuda),
        torch=_split(args.torch),
        python=_split(args.python),
        platform=_split(args.platform),
    )


def cmd_plan(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    matrix = load_matrix(args.matrix)
    expansion = expand(matrix)
    plan = make_plan(
        matrix,
        expansion,
        filters=_filters(args),
        existing=existing_build_ids(args.existing),
        max_jobs=args.max_jobs,
    )
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
        print(
            f"planned {len(expansion.cells)} cells -> {len(expansion.builds)} builds "
            f"in {time.perf_counter() - started:.2f}s"
        )
    for w in plan.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return 0


def _add_target_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", nargs="?", help="a build id from `wheelfarm plan`")
    p.add_argument(
        "--local",
        action="store_true",
        help="build for this machine: its CUDA toolkit, this Python and platform, the "
        "newest torch for them, pip's own torch index",
    )
    p.add_argument("--package", help="with --local or flags: the package (default wheelfarm-demo)")
    p.add_argument("--cuda", help="CUDA tag, e.g. cu130 (default with --local: the toolkit's)")
    p.add_argument("--torch", help="torch minor, e.g. 2.14 (default: newest that fits)")
    p.add_argument("--python", help="Python version, e.g. 3.12 (default with --local: this one)")
    p.add_argument("--platform", help="farm platform (default with --local: this machine)")
    p.add_argument("--torch-index", help="torch index URL, or 'pip' for pip's configuration")
    p.add_argument("--archs", help="replace the arch list, e.g. '9.0' (a quick local build)")


def _add_helper_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--helper",
        type=Path,
        default=Path("scripts/wheelfarm_install.py"),
        help="install helper copied to <site>/install.py when it exists (default: the checkout's)",
    )


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
    p.add_argument("--sdist-index", default=DEFAULT_SDIST_INDEX, help="PEP 503 index for sdists")
    p.add_argument("--plat", help="auditwheel --plat (default: farm.yaml's tag; 'auto' locally)")
    p.add_argument("--python-exe", help="interpreter to build with (default: found by version)")


def _target(args: argparse.Namespace) -> tuple[Target, bool]:
    """The target from a build id, or from flags with this machine's defaults."""
    matrix = load_matrix(args.matrix)
    if args.target:
        return resolve(matrix, args.target), False
    if not (args.local or args.package):
        msg = "give a build id (see `wheelfarm plan`), or --local, or --package with flags"
        raise PlanError(msg)
    cuda = args.cuda or installed_cuda_tag(dict(os.environ))
    python = args.python or f"{sys.version_info[0]}.{sys.version_info[1]}"
    target = select(
        matrix,
        package=args.package or DEMO_PACKAGE,
        cuda=cuda,
        python=python,
        platform=args.platform or host_platform_name(),
        torch=args.torch,
    )
    if args.archs:
        target = dataclasses.replace(
            target, build=dataclasses.replace(target.build, archs=ArchList.parse(args.archs))
        )
    return target, True


def cmd_build(args: argparse.Namespace) -> int:
    target, local = _target(args)
    opts = _build_options(args, local=local, out=args.out)
    print(
        f"building {target.id} (archs {target.build.archs.torch}, torch {target.build.torch})",
        file=sys.stderr,
    )
    result = run_build(target, opts)
    total = sum(result.durations.values())
    print(f"built {result.wheel} in {total:.1f}s; record {result.record.name}", file=sys.stderr)
    print(result.wheel)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    target, local = _target(args)
    index = args.torch_index or (PIP_INDEX if local else target.torch_index)
    report = verify_wheel(
        args.wheel,
        target,
        cache=(args.cache or default_cache()).resolve(),
        index=index,
        import_check=not args.no_import,
    )
    for binary, archs in report.archs.items():
        print(f"{binary}: SASS {' '.join(archs['cubins'])}; PTX {' '.join(archs['ptx']) or '-'}")
    print(f"ok: {args.wheel.name} matches {target.id}")
    return 0


def _build_options(args: argparse.Namespace, *, local: bool, out: Path) -> BuildOptions:
    return BuildOptions(
        out_dir=out.resolve(),
        work_dir=args.work.resolve(),
        cache=(args.cache or default_cache()).resolve(),
        torch_index=args.torch_index or (PIP_INDEX if local else None),
        sdist_index=args.sdist_index,
        plat=args.plat or ("auto" if local else None),
        python=args.python_exe,
    )


def cmd_index(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix)
    yanked = yanked_versions(matrix)
    files = None
    if args.wheelhouse is not None:
        entries, files = from_wheelhouse(args.wheelhouse, matrix, yanked)
    else:
        github = GitHubReleases(args.github, api=args.api)
        entries = github.entries(
            matrix, yanked, previous={e.url: e for e in read_manifest(args.out).values()}
        )
        print(
            f"read {len(entries)} wheels with {github.requests_made} API requests", file=sys.stderr
        )
    result = build_site(
        entries,
        args.out,
        files=files,
        allow_removal=args.allow_removal,
        title=args.title,
        extra=_site_extras(matrix, entries, args.helper),
    )
    print(
        f"site {args.out}: {len(entries)} wheels in {result.combos} (cuda, torch) indexes; "
        f"{len(result.written)} files written, {result.unchanged} unchanged, "
        f"{len(result.removed)} removed"
    )
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    if not (args.dir / "index.html").is_file():
        msg = f"{str(args.dir)!r} has no index.html: build it with `wheelfarm index` first"
        raise SiteError(msg)
    server = make_server(args.dir, args.bind, args.port)
    print(
        f"serving {args.dir} at http://{args.bind}:{server.server_address[1]}/ (Ctrl-C stops)",
        flush=True,
    )
    with server:
        server.serve_forever()
    return 0


def cmd_farm(args: argparse.Namespace) -> int:
    """The local farm: plan what this machine can build, build it, index it, print commands."""
    target, _ = _target(args)
    matrix = load_matrix(args.matrix)
    store = args.store.resolve()
    b = target.build
    mine = Filters(package=(b.package,), cuda=(b.cuda,), torch=(b.torch_minor or "*",),
                   python=(b.python,), platform=(b.platform,))  # fmt: skip
    plan = make_plan(matrix, expand(matrix), filters=mine,
                     existing=existing_build_ids(store if store.is_dir() else None))  # fmt: skip
    print(f"[plan] {len(plan.todo)} to build, {len(plan.present)} already in {store}",
          file=sys.stderr)  # fmt: skip
    for build in plan.todo:
        todo = target if build.id == target.id else resolve(matrix, build.id)
        run_build(todo, _build_options(args, local=True, out=store))
    entries, files = from_wheelhouse(store, matrix, yanked_versions(matrix))
    result = build_site(
        entries,
        args.site,
        files=files,
        title=args.title,
        extra=_site_extras(matrix, entries, args.helper),
    )
    # a torch-free wheel is listed under every torch: point at the newest
    torch = b.torch_minor or max((c.torch for c in b.covers), key=Version)
    index = f"{args.site.resolve().as_uri()}/{b.cuda}/torch{torch}/"
    print(f"[index] {args.site}: {len(entries)} wheels, {result.combos} indexes", file=sys.stderr)
    name = target.package.display_name
    print(f"pip install {name} --extra-index-url {index}")
    print(f"uv pip install {name} --extra-index-url {index}")
    print(
        f"# or serve it: wheelfarm serve {args.site} --port 8000, then use "
        f"http://127.0.0.1:8000/{b.cuda}/torch{torch}/"
    )
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    wheels = sorted(args.wheelhouse.glob("*.whl"))
    if not wheels:
        msg = f"no wheels in {str(args.wheelhouse)!r}: nothing to publish"
        raise PublishError(msg)
    publisher = GitHubPublisher(args.repo, api=args.api, uploads=args.uploads)
    report = publish(wheels, publisher, echo=lambda line: print(line, file=sys.stderr))
    releases = ", ".join(sorted(report.releases)) or "-"
    print(
        f"published {len(wheels)} wheels: {len(report.uploaded)} files uploaded, "
        f"{len(report.skipped)} already there, releases: {releases}"
    )
    return 0


def _site_extras(
    matrix: Matrix, entries: list[WheelEntry], helper: Path | None
) -> dict[str, bytes]:
    """Root files beside the index: the coverage chart, and the install helper when found."""
    present = {build_id_from_wheel(e.filename) for e in entries}
    extra = {"coverage.svg": svg(coverage(expand(matrix), present)).encode()}
    if helper is not None and helper.is_file():
        extra["install.py"] = helper.read_bytes()
    return extra


def cmd_coverage(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix)
    rows = coverage(expand(matrix), existing_build_ids(args.existing))
    if args.write_docs:
        root = MATRIX_DIR.parent
        write_docs(rows, root / "docs" / "coverage.md", root / "README.md")
    print(markdown(rows), end="")
    return 0


def cmd_toolkit(args: argparse.Namespace) -> int:
    facts = toolkit(args.cuda, args.platform)
    if args.field:
        print(facts[args.field])
    else:
        print(json.dumps(facts, indent=2))
    return 0


def cmd_pages_url(args: argparse.Namespace) -> int:
    print(pages_url(args.repo))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix)
    print(f"ok: {len(matrix.packages)} packages, {len(matrix.releases)} torch releases")
    return 0


def _matrix_commands(add: Add) -> None:
    """plan, validate: read the YAML."""
    p = add("plan", cmd_plan, "Expand the matrix and plan the builds that are missing.")
    _add_filters(p)
    p.add_argument(
        "--existing", type=Path, help="packages.json of the published index, or a folder of wheels"
    )
    p.add_argument("--max-jobs", type=int, help="jobs per shard (default farm.yaml, max 256)")
    p.add_argument("--format", choices=("table", "json", "github"), default="table")
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
    _add_helper_arg(p)
    p.set_defaults(local=True)


def _site_commands(add: Add) -> None:
    """index, publish, coverage, toolkit, pages-url, serve: the farm's outputs."""
    p = add("index", cmd_index, "Write the PEP 503 site from a wheelhouse or GitHub Releases.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--wheelhouse", type=Path, help="a folder of wheels (+ .build.json)")
    src.add_argument("--github", metavar="OWNER/REPO", help="read the repository's releases")
    p.add_argument("--api", default="https://api.github.com", help="GitHub API base URL")
    p.add_argument("--out", type=Path, default=Path("site"))
    p.add_argument(
        "--allow-removal",
        action="store_true",
        help="let the new site drop wheels the previous one listed",
    )
    p.add_argument("--title", default="wheelfarm")
    _add_helper_arg(p)

    p = add(
        "publish",
        cmd_publish,
        "Upload wheels, .metadata and build records to GitHub Releases; never overwrite.",
    )
    p.add_argument("wheelhouse", type=Path)
    p.add_argument(
        "--repo",
        default=os.environ.get("GITHUB_REPOSITORY"),
        required="GITHUB_REPOSITORY" not in os.environ,
        help="OWNER/REPO",
    )
    p.add_argument("--api", default=os.environ.get("GITHUB_API_URL", "https://api.github.com"))
    p.add_argument("--uploads", default="https://uploads.github.com")

    p = add("coverage", cmd_coverage, "Built / missing wheels per package and platform.")
    p.add_argument("--existing", type=Path, help="packages.json of the index, or a wheelhouse")
    p.add_argument(
        "--write-docs", action="store_true", help="rewrite docs/coverage.md and the README table"
    )

    p = add("toolkit", cmd_toolkit, "Print what to install for a CUDA tag (toolkits.yaml).")
    p.add_argument("cuda", help="e.g. cu130")
    p.add_argument("--platform", default="linux_x86_64", choices=PLATFORMS)
    p.add_argument("--field", help="print one value (version, repo, packages, ...)")

    p = add("pages-url", cmd_pages_url, "Print the GitHub Pages URL of a repository.")
    p.add_argument(
        "--repo",
        default=os.environ.get("GITHUB_REPOSITORY"),
        required="GITHUB_REPOSITORY" not in os.environ,
        help="OWNER/REPO",
    )

    p = add("serve", cmd_serve, "Serve a built site over HTTP for local use.")
    p.add_argument("dir", type=Path, nargs="?", default=Path("site"))
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--bind", default="127.0.0.1")

    p = add("verify", cmd_verify, "Check a built wheel against its target (static + import).")
    p.add_argument("wheel", type=Path)
    _add_target_args(p)
    p.add_argument("--no-import", action="store_true", help="skip the import check")
    p.add_argument("--cache", type=Path, default=None)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wheelfarm",
        description="Build CUDA wheels for every (CUDA, torch, Python, platform), publish them "
        "and index them for pip and uv.",
    )
    parser.add_argument("--version", action="version", version=f"wheelfarm {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, handler: Handler, text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=text, description=text)
        p.set_defaults(handler=handler)
        p.add_argument(
            "--matrix",
            type=Path,
            default=MATRIX_DIR,
            help="folder with torch.yaml, arch.yaml, farm.yaml and packages/",
        )
        return p

    _matrix_commands(add)
    _build_commands(add)
    _site_commands(add)
    return parser


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
