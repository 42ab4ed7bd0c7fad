"""The `wheelfarm` command: thin argparse front over the library. Only `main` prints errors and
chooses the exit code; everything below raises."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from wheelfarm import __version__
from wheelfarm.builder import envs
from wheelfarm.builder.build import BuildOptions, check_import, expectation, find_python, run_build
from wheelfarm.builder.envs import PIP_INDEX, default_cache
from wheelfarm.builder.source import DEFAULT_SDIST_INDEX
from wheelfarm.builder.target import Target, host_platform_name, resolve, select
from wheelfarm.builder.toolchain import find_cuda_home, nvcc_version
from wheelfarm.builder.verify import verify_static
from wheelfarm.cmd import call
from wheelfarm.errors import PlanError, ToolchainError, VerifyError, WheelfarmError
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import MATRIX_DIR, load_matrix
from wheelfarm.matrix.model import cuda_tag
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
DEMO_PACKAGE = "wheelfarm-demo"


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


def _add_target_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", nargs="?", help="a build id from `wheelfarm plan`")
    p.add_argument("--local", action="store_true",
                   help="build for this machine: its CUDA toolkit, this Python and platform, the "
                        "newest torch for them, pip's own torch index")
    p.add_argument("--package", help="with --local or flags: the package (default wheelfarm-demo)")
    p.add_argument("--cuda", help="CUDA tag, e.g. cu130 (default with --local: the toolkit's)")
    p.add_argument("--torch", help="torch minor, e.g. 2.14 (default: newest that fits)")
    p.add_argument("--python", help="Python version, e.g. 3.12 (default with --local: this one)")
    p.add_argument("--platform", help="farm platform (default with --local: this machine)")
    p.add_argument("--torch-index", help="torch index URL, or 'pip' for pip's configuration")


def _target(args: argparse.Namespace) -> tuple[Target, bool]:
    """The target from a build id, or from flags with this machine's defaults."""
    matrix = load_matrix(args.matrix)
    if args.target:
        return resolve(matrix, args.target), False
    if not (args.local or args.package):
        msg = "give a build id (see `wheelfarm plan`), or --local, or --package with flags"
        raise PlanError(msg)
    cuda = args.cuda
    if cuda is None:
        home = find_cuda_home(dict(os.environ))
        if home is None:
            msg = "no CUDA toolkit found to default --cuda from; pass --cuda"
            raise ToolchainError(msg)
        cuda = cuda_tag(nvcc_version(call([home / "bin" / "nvcc", "--version"], capture=True)))
    python = args.python or f"{sys.version_info[0]}.{sys.version_info[1]}"
    target = select(matrix, package=args.package or DEMO_PACKAGE, cuda=cuda, python=python,
                    platform=args.platform or host_platform_name(), torch=args.torch)
    return target, True


def cmd_build(args: argparse.Namespace) -> int:
    target, local = _target(args)
    cache = args.cache or default_cache()
    opts = BuildOptions(
        out_dir=args.out.resolve(), work_dir=args.work.resolve(), cache=cache.resolve(),
        torch_index=args.torch_index or (PIP_INDEX if local else None),
        sdist_index=args.sdist_index, plat=args.plat or ("auto" if local else None),
        python=args.python_exe)
    print(f"building {target.id} (archs {target.build.archs.torch}, torch {target.build.torch})",
          file=sys.stderr)
    result = run_build(target, opts)
    total = sum(result.durations.values())
    print(f"built {result.wheel} in {total:.1f}s; record {result.record.name}", file=sys.stderr)
    print(result.wheel)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    target, local = _target(args)
    report = verify_static(args.wheel, expectation(target))
    if report.problems:
        raise VerifyError(args.wheel.name, report.problems)
    if not args.no_import:
        cache = (args.cache or default_cache()).resolve()
        work = Path(tempfile.mkdtemp(prefix="wheelfarm-verify-"))
        log = work / "verify.log"
        build = target.build
        python = find_python(build.python, None)
        torch_env = None if build.torch is None else envs.torch_env(
            cache, python=python, torch=build.torch, cuda=build.cuda,
            index=args.torch_index or (PIP_INDEX if local else target.torch_index), log=log)
        check_import(args.wheel, target.package.imports, torch_env, work / "venv",
                     python=python, log=log)
        shutil.rmtree(work, ignore_errors=True)
    for binary, archs in report.archs.items():
        print(f"{binary}: SASS {' '.join(archs['cubins'])}; PTX {' '.join(archs['ptx']) or '-'}")
    print(f"ok: {args.wheel.name} matches {target.id}")
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

    p = add("build", cmd_build, "Compile, relabel, repair and verify one target.")
    _add_target_args(p)
    p.add_argument("--out", type=Path, default=Path("wheelhouse"), help="where wheels go")
    p.add_argument("--work", type=Path, default=Path(".wheelfarm/work"),
                   help="scratch folder (kept on failure)")
    p.add_argument("--cache", type=Path, default=None,
                   help="torch envs, sdists, ccache (default $WHEELFARM_CACHE or ~/.cache/wheelfarm)")
    p.add_argument("--sdist-index", default=DEFAULT_SDIST_INDEX, help="PEP 503 index for sdists")
    p.add_argument("--plat", help="auditwheel --plat (default: farm.yaml's tag; 'auto' locally)")
    p.add_argument("--python-exe", help="interpreter to build with (default: found by version)")

    p = add("verify", cmd_verify, "Check a built wheel against its target (static + import).")
    p.add_argument("wheel", type=Path)
    _add_target_args(p)
    p.add_argument("--no-import", action="store_true", help="skip the import check")
    p.add_argument("--cache", type=Path, default=None)
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
