"""`wheelfarm build`: toolchain -> environment -> source -> compile -> relabel -> repair ->
verify -> record, each step timed, logged to its own file and announced with a progress line."""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from wheelfarm.builder import ccache, driver, envs, gpucheck, provenance, shard, source, toolchain
from wheelfarm.builder.buildenv import compile_env, find_python
from wheelfarm.builder.importcheck import check_import, install_farm_wheel
from wheelfarm.builder.platforms import REPAIRERS, RepairJob
from wheelfarm.builder.policy import library_policy
from wheelfarm.builder.relabel import relabel
from wheelfarm.builder.steps import Steps
from wheelfarm.builder.symbols import check_wheel as check_symbols
from wheelfarm.builder.target import Target
from wheelfarm.builder.verify import Expectation, Report, verify_static
from wheelfarm.core import record
from wheelfarm.core.errors import (
    BuildError,
    VerifyError,
    WheelfarmError,
)
from wheelfarm.core.platforms import os_of
from wheelfarm.core.proc import Runner, call

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 60.0  # a compile prints its progress this often


@dataclass(frozen=True, kw_only=True)
class BuildOptions:
    """Whole-run settings for the builder; defaults suit a laptop."""

    out_dir: Path
    work_dir: Path
    cache: Path
    torch_index: str | None = None  # None: torch.yaml's index for the CUDA; "pip": pip's config
    sdist_index: str = source.DEFAULT_SDIST_INDEX
    plat: str | None = None  # auditwheel --plat; None: the platform's manylinux tag
    python: str | None = None  # interpreter to build for; None: found from the target
    deadline: float | None = None  # time.time() at which the compile is stopped (a CI job's limit)
    split: shard.Split | None = None  # a compile shard or the link build of a split compile
    farm_wheels: str | None = None  # farm_requires from: a wheelhouse or the farm's index URL;
    # None: out_dir
    fetch_timeout: float = source.FETCH_SECONDS  # seconds the source download or clone may take
    run: Runner = call  # what runs every tool of the build (a test's recording fake)

    def recorded(self) -> record.RecordedOptions:
        """The options the build record keeps (core.record.RecordedOptions names them, each a
        field here), so a new recorded option needs no code here; resolve a None first."""
        names = [f.name for f in dataclasses.fields(record.RecordedOptions)]
        return record.RecordedOptions(**{name: getattr(self, name) for name in names})

    def replaying(self, recorded: record.RecordedOptions | None) -> BuildOptions:
        """These options with a build record's recorded ones in place, for `verify --rebuild`
        (None: a version 1 record, which kept none, leaves the defaults)."""
        if recorded is None:
            return self
        return dataclasses.replace(self, **dataclasses.asdict(recorded))


@dataclass(frozen=True)
class BuildResult:
    """A verified wheel in the wheelhouse, its build record, and each step's seconds."""

    wheel: Path
    record: Path
    durations: dict[str, float]


@dataclass(frozen=True)
class ShardResult:
    """A compile shard makes no wheel: its product is the compiler cache it filled, and
    `summary` (`<build id>.shard-IofK.json`) says what it compiled."""

    summary: Path
    durations: dict[str, float]


@dataclass(frozen=True)
class _Compiled:
    """What the first four steps leave for the rest: the raw wheel and how it was made."""

    work: Path
    python: str
    index: str
    tc: toolchain.Toolchain
    torch_env: envs.TorchEnv | None
    torch_site: Path | None
    env: dict[str, str]
    wheel: Path
    ccache: dict[str, int]
    split: dict[str, object]  # shard.finish's summary; empty without a split
    durations: dict[str, float]  # the compile's own steps: each of its wheels' record keeps them
    label: str  # the label of the target it was compiled as (a package may set it natively)


def expectation(target: Target) -> Expectation:
    b = target.build
    return Expectation(
        name=b.distribution,
        version=b.version,
        label=b.label,
        python_tag=b.python_tag,
        platform=b.platform,
        archs=b.archs,
        one_arch_per_binary=target.package.one_arch_per_binary,
        some_archs_per_binary=target.package.some_archs_per_binary,
        policy=library_policy(target.root, os_of(b.platform)),
        vendor_allow=target.package.vendor_allow,
    )


def _target_torch_env(
    target: Target,
    *,
    cache: Path,
    python: str,
    index: str,
    log: Path,
    importing: bool = False,
    compiling: bool = False,
    run: Runner = call,
) -> envs.TorchEnv | None:
    """The shared torch venv a target builds against (none for torch-free), `compiling` its
    compile's (another minor's of its major, ADR 19), or, `importing`, imports against (a
    torch-free package with `import_with_torch`: its CUDA's newest torch)."""
    torch = target.import_torch if importing else target.build.torch
    if torch is None:
        return None
    cuda = target.compile_env_cuda if compiling else target.build.cuda
    return envs.torch_env(
        cache, python=python, torch=torch, cuda=cuda, index=index, log=log, run=run
    )


def _verified_static(wheel: Path, target: Target) -> Report:
    report = verify_static(wheel, expectation(target))
    if report.problems:
        raise VerifyError(wheel.name, report.problems)
    return report


def verify_wheel(
    wheel: Path,
    target: Target,
    *,
    cache: Path,
    index: str,
    python: str | None = None,
    import_check: bool = True,
    farm_wheels: str | Path | None = None,
    kernels: str | None = None,
    run: Runner = call,
) -> Report:
    """`wheelfarm verify`: the static checks, then the import check in a fresh venv (its
    farm_requires from `farm_wheels`, default the wheel's own folder) and, with `kernels`
    ('cuda' or 'cpu'), the package's kernel check in that venv (builder/gpucheck.py). The
    scratch folder (with its log) is kept when the import fails."""
    report = _verified_static(wheel, target)
    if import_check:
        work = Path(tempfile.mkdtemp(prefix="wheelfarm-verify-"))
        log = work / "verify.log"
        py = find_python(target.build.python, python)
        torch_env = _target_torch_env(
            target, cache=cache, python=py, index=index, log=log, importing=True, run=run
        )
        venv_py, env = check_import(
            wheel,
            target.package.imports,
            torch_env,
            work / "venv",
            python=py,
            log=log,
            requires=target.package.import_requires,
            farm=target.farm_requires,
            gpu_imports=target.package.imports_gpu,
            farm_source=farm_wheels or wheel.parent,
            run=run,
        )
        if kernels is not None:
            report.kernels = gpucheck.run_check(
                venv_py, target.root, target.package.name, kernels, env=env, log=log, run=run
            )
        shutil.rmtree(work, ignore_errors=True)
    return report


def _compile_wheel(
    py: Path,
    src: Path,
    dist: Path,
    env: dict[str, str],
    log: Path,
    deadline: float | None = None,
    *,
    run: Runner = call,
) -> tuple[Path, dict[str, int]]:
    """`pip wheel` the source tree with the build env; the one wheel and the ccache hits and
    misses it caused. Stopped at `deadline`: what was compiled stays in the compiler cache, so
    the same build run again resumes from there."""
    if deadline is not None and time.time() >= deadline:
        msg = "the deadline passed before the compile started; run the job again"
        raise BuildError(msg)
    before = ccache.counts(env, run=run)
    shutil.rmtree(dist, ignore_errors=True)
    pip_wheel = ["-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-cache-dir"]
    try:
        run(
            [py, *pip_wheel, "--disable-pip-version-check", "-v", "-w", dist, src],
            env=env,
            cwd=src,
            log=log,
            heartbeat=HEARTBEAT_SECONDS,
            deadline=deadline,
        )
    except BuildError as exc:
        if deadline is None or time.time() < deadline:
            raise
        msg = f"{exc}; what it compiled is in the compiler cache: run the job again to resume"
        raise BuildError(msg) from exc
    after = ccache.counts(env, run=run)
    built = list(dist.glob("*.whl"))
    if len(built) != 1:
        msg = f"expected one wheel in {dist}, found {[p.name for p in built]}"
        raise BuildError(msg)
    return built[0], {k: after[k] - before.get(k, 0) for k in after}


def _compile(target: Target, opts: BuildOptions, steps: Steps) -> _Compiled:
    """Toolchain, environment, source and compile: what a wheel and a compile shard share. The
    target's compile (ADR 19) sets them: its CUDA's toolkit and torch, which may be another
    minor's of its major than the target's own."""
    work = opts.work_dir / target.build.compile_id
    build, pkg = target.build, target.package
    python = find_python(build.python, opts.python)
    index, run = opts.torch_index or target.compile_index, opts.run
    with steps.step("toolchain") as log:
        tc = toolchain.detect(
            build.compile_cuda,
            dict(os.environ),
            work=opts.cache,
            log=log,
            root=target.root,
            run=run,
        )
        log.write_text(f"CUDA_HOME={tc.cuda_home}\nnvcc {tc.version}\n{tc.compiler}\n")
    with steps.step("environment") as log:
        link = driver.link_env(tc.cuda_home, work / "link-stubs", os.environ, log, run=run)
        torch_env = _target_torch_env(
            target, cache=opts.cache, python=python, index=index, log=log, compiling=True, run=run
        )
        py = envs.overlay(torch_env, work / "build-venv", python=python, log=log, run=run)
        if pkg.build_requires:
            envs.install_requirements(py, pkg.build_requires, log=log, run=run)
        for required in (w for w in target.farm_requires if w.at_build):
            farm_source = opts.farm_wheels or opts.out_dir
            install_farm_wheel(py, required, farm_source, log=log, for_wheel=target.id, run=run)
        torch_site = envs.site_packages(torch_env.python, run=run) if torch_env else None
    with steps.step("source") as log:
        src = source.fetch(
            pkg.name,
            target.source,
            work,
            root=target.root,
            cache=opts.cache,
            sdist_index=opts.sdist_index,
            log=log,
            timeout=opts.fetch_timeout,
            run=run,
        )
    include = envs.python_include(py, run=run)
    env = compile_env(target, tc, py.parent, torch_site, work, opts.cache, link, include)
    env = shard.prepare(env, opts.split, src=src, work=work)
    archs = build.archs.torch if build.archs.archs else "none (no device code)"
    logger.info("archs: %s; MAX_JOBS=%s", archs, env.get("MAX_JOBS"))
    with steps.step("compile") as log:
        built, ccache = _compile_wheel(py, src, work / "dist", env, log, opts.deadline, run=run)
        split = shard.finish(opts.split, ccache, env)
    if ccache:
        logger.info("compiler cache: %d hits, %d misses", ccache["hits"], ccache["misses"])
    return _Compiled(
        work, python, index, tc, torch_env, torch_site, env, built, ccache, split,
        dict(steps.durations), build.label,
    )  # fmt: skip


def run_shard(target: Target, opts: BuildOptions) -> ShardResult:
    """One compile shard of a split build (`opts.split` a shard): compile its share of the
    objects into the compiler cache, and write what it did beside the wheels."""
    if opts.split is None or not opts.split.is_shard:
        msg = "run_shard builds a compile shard: opts.split names none"
        raise ValueError(msg)
    steps = Steps(opts.out_dir / "logs" / target.id)
    made = _compile(target, opts, steps)
    shutil.rmtree(made.work, ignore_errors=True)  # the wheel it made is a husk
    summary = {**made.split, "ccache": made.ccache, "steps_seconds": steps.durations}
    return ShardResult(shard.write_summary(opts.out_dir, target.id, summary), steps.durations)


def run_build(target: Target, opts: BuildOptions) -> BuildResult:
    """Build, repair and verify one target; keep logs and the work folder on failure."""
    for _, outcome in run_compile([target], opts):
        if isinstance(outcome, WheelfarmError):
            raise outcome
        return outcome
    msg = "run_compile made nothing of one target"  # pragma: no cover - it always yields one
    raise AssertionError(msg)


Outcome = tuple[Target, BuildResult | WheelfarmError]


def run_compile(targets: Sequence[Target], opts: BuildOptions) -> Iterator[Outcome]:
    """One compile and each target's wheel from it (ADR 19): every target is a CUDA minor of
    the first's compile, so the binary is compiled once, then relabelled, repaired, verified
    against each target's own torch and recorded, target by target. A target that fails
    (its verify refuses the binary for its runtime) is yielded as its error and the others
    go on; a failed compile raises. The work folder is kept when anything failed."""
    if opts.split is not None and opts.split.is_shard:
        msg = "a compile shard makes no wheel: run_shard builds it"
        raise ValueError(msg)
    first = targets[0]
    made = _compile(first, opts, Steps(opts.out_dir / "logs" / first.id))
    failed = False
    for i, target in enumerate(targets):
        if target.build.compile_id != first.build.compile_id:
            msg = f"{target.id} is not of the compile {first.build.compile_id}"
            raise ValueError(msg)
        # the first target's log folder holds the compile's logs; the others' their own steps
        steps = Steps(opts.out_dir / "logs" / target.id, keep=i == 0)
        try:
            yield target, _finish(target, made, opts, steps)
        except WheelfarmError as exc:  # one minor's refusal must not stop the rest
            failed = True
            yield target, exc
    if not failed:
        shutil.rmtree(made.work, ignore_errors=True)


def _finish(target: Target, made: _Compiled, opts: BuildOptions, steps: Steps) -> BuildResult:
    """Relabel the compiled wheel as the target's, repair, verify against the target's own
    torch (its import, and every symbol its binaries import) and record it."""
    build = target.build
    work = made.work / build.label
    with steps.step("relabel"):
        requires = tuple(f.requirement for f in target.farm_requires)
        labelled = relabel(
            made.wheel,
            build.label,
            work / "relabelled",
            requires,
            name=build.distribution,
            replacing=target.compiled_requires,
            compiled=made.label,
        )
    with steps.step("repair") as log:
        job = RepairJob(
            wheel=labelled,
            out_dir=work / "repaired",
            plat=opts.plat or target.wheel_platform,
            torch_lib=made.torch_site / "torch" / "lib" if made.torch_site else None,
            policy=library_policy(target.root, os_of(build.platform)),
            log=log,
        )
        repaired = REPAIRERS[build.platform].repair(job)
    with steps.step("verify") as log:
        report = _verified_static(repaired, target)
        verified_env = _import_checked(repaired, target, made, opts, log)
        _symbols_checked(repaired, verified_env, opts, log)
    with steps.step("record"):
        recorded = dataclasses.replace(opts, torch_index=made.index, plat=job.plat).recorded()
        timing = record.Timing(
            created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            steps_seconds={**made.durations, **steps.durations},
            ccache=made.ccache,
        )
        facts = provenance.build_record(
            repaired,  # its name, hash and size: the wheelhouse's copy is these bytes
            target,
            tc=made.tc,
            report=report,
            env=made.env,
            work=made.work,
            torch_env=made.torch_env,
            verified_env=verified_env,
            options=recorded,
            timing=timing,
        )
        # only a verified wheel reaches the wheelhouse (where publish and the planner look)
        wheel, path = into_wheelhouse(repaired, facts.to_json(), opts.out_dir)
    return BuildResult(wheel, path, {**made.durations, **steps.durations})


def _symbols_checked(
    wheel: Path, torch_env: envs.TorchEnv | None, opts: BuildOptions, log: Path
) -> None:
    """Each binary's imports against the libraries of the torch env it was verified with
    (builder/symbols.py): a wheel relabelled from another minor's compile loads only if its
    runtime exports all it asks for. Nothing to check against without a torch env."""
    if torch_env is None:
        return
    site = envs.site_packages(torch_env.python, run=opts.run)
    problems = check_symbols(wheel, site, f"torch {torch_env.torch} ({torch_env.cuda})")
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"symbols: {len(problems)} missing against {site}\n")
    if problems:
        raise VerifyError(wheel.name, problems)


def into_wheelhouse(wheel: Path, facts: str, out: Path) -> tuple[Path, Path]:
    """The verified wheel and its record into `out`, each written beside its place first and
    renamed into it: a full disk (or any write error) leaves the wheelhouse as it was, an
    earlier build of the same wheel included, and is one BuildError naming the cause."""
    dest = out / wheel.name
    parts = [dest.with_name(f".{dest.name}.partial"), dest.with_name(f".{dest.name}.record")]
    try:
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(wheel, parts[0])
        parts[1].write_text(facts, encoding="utf-8")
        parts[0].replace(dest)
        parts[1].replace(record.path_for(dest))
    except OSError as exc:
        for part in parts:
            part.unlink(missing_ok=True)
        msg = (
            f"cannot write {wheel.name} into the wheelhouse {str(out)!r} ({exc.strerror or exc}); "
            f"the wheelhouse is as it was: free space there (or fix the cause) and build again"
        )
        raise BuildError(msg) from exc
    return dest, record.path_for(dest)


def _import_checked(
    wheel: Path, target: Target, made: _Compiled, opts: BuildOptions, log: Path
) -> envs.TorchEnv | None:
    """The verify step's import check, beside the target's own torch: the compile's where it
    is the same build (torch and CUDA), else the target's (another minor of the compile, ADR
    19; a torch-free package that imports beside one); the env it ran in."""
    same = made.torch_env is not None and (made.torch_env.torch, made.torch_env.cuda) == (
        target.import_torch,
        target.build.cuda,
    )
    torch_env = (
        made.torch_env
        if same or (made.torch_env is None and target.import_torch is None)
        else _target_torch_env(
            target,
            cache=opts.cache,
            python=made.python,
            index=opts.torch_index or target.torch_index,
            log=log,
            importing=True,
            run=opts.run,
        )
    )
    check_import(
        wheel,
        target.package.imports,
        torch_env,
        made.work / target.build.label / "verify-venv",
        python=made.python,
        log=log,
        requires=target.package.import_requires,
        farm=target.farm_requires,
        gpu_imports=target.package.imports_gpu,
        farm_source=opts.farm_wheels or opts.out_dir,
        run=opts.run,
    )
    return torch_env
