"""The verify step's import check: the wheel installed into a fresh venv beside its torch (with
its import_requires and farm_requires), then each module imported and each extension loaded in
a child process, whose failure names the exception or signal it died of."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

from wheelfarm.builder import driver, envs, provenance
from wheelfarm.builder.target import FarmWheel
from wheelfarm.core import loadcheck, record
from wheelfarm.core.digest import sha256_file
from wheelfarm.core.errors import BuildError, ConfigError, VerifyError
from wheelfarm.core.proc import CommandFailedError, Runner, call
from wheelfarm.core.wheelname import build_id_or_none
from wheelfarm.matrix.load import module_problem

logger = logging.getLogger(__name__)

# The import check's program: the module names come as arguments (data), never as its code.
IMPORT_PROGRAM = (
    "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
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
    run: Runner = call,
) -> tuple[Path, dict[str, str]]:
    """Install the wheel into a fresh venv beside the target's torch (none for a torch-free
    wheel), with the package's `import_requires` from the default index (and the torch index,
    with torch held at the env's own build: nunchaku's torchvision) and its
    `farm_requires` from `farm_source`, and import its modules (after torch, which loads the
    libraries a torch extension needs). A wheel that links the GPU driver imports against a
    stub where this machine has none (driver.py). `gpu_imports` (import_gpu) are imported too
    where the real driver loads, and skipped with a line saying so where it does not. Returns
    the venv's Python and the environment the checks ran with (a kernel check runs there)."""
    bad = [m for m in (*imports, *gpu_imports) if module_problem(m)]
    if bad:  # before any venv is made or program run: the names are data from a package file
        raise ConfigError(
            [f"import: {bad[0]!r} is not a dotted module name: fix the package's import list"]
        )
    py = envs.overlay(torch_env, venv, python=python, log=log, run=run)
    stub = venv.with_name(f"{venv.name}-driver")
    env = {**os.environ, **driver.import_env(wheel, stub, os.environ, log, run=run)}
    if requires:
        pin = (
            ()
            if torch_env is None
            else torch_pin(torch_env, venv.with_name(f"{venv.name}-torch.txt"))
        )
        envs.install_requirements(py, requires, log=log, options=pin, run=run)
    for required in farm:
        install_farm_wheel(py, required, farm_source, log=log, for_wheel=wheel.name, run=run)
    envs.pip_install(py, "--no-deps", "--no-index", wheel, log=log, run=run)
    first = ("torch",) if torch_env is not None else ()
    if gpu_imports and not driver.driver_loads():
        logger.info(
            "import check: skipped %s (import_gpu): they need a GPU, and this builder has none",
            ", ".join(gpu_imports),
        )
    elif gpu_imports:
        imports = (*imports, *gpu_imports)
    names = ", ".join(imports)
    program = [IMPORT_PROGRAM, *first, *imports]
    _checked(wheel, f"import of {names}", program, py, env, log, run)
    for member in loadcheck.extension_members(loadcheck.record_members(wheel)):
        load = [loadcheck.LOAD_PROGRAM, first[0] if first else "", "", member]
        _checked(wheel, f"loading {member}", load, py, env, log, run)
    return py, env


def _checked(
    wheel: Path,
    what: str,
    program: list[str],
    py: Path,
    env: dict[str, str],
    log: Path,
    run: Runner,
) -> None:
    """Run one import-check child; its failure names the exception it died of (its
    traceback's last line) or the signal that killed it."""
    start = log.stat().st_size if log.exists() else 0
    try:
        run([py, "-c", *program], env=env, log=log)
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
    py: Path,
    required: FarmWheel,
    source: str | Path,
    *,
    log: Path,
    for_wheel: str,
    run: Runner = call,
) -> None:
    """One farm_requires wheel, exactly the build serving the import cell: from the farm's
    index (its per-CUDA, per-torch directory; pip checks the page's sha256 of the file), or
    from a wheelhouse folder, where only a copy whose bytes its build record (of that planned
    build) hashed is installed: build code writes that folder, so a wheel with the pinned name
    and no record, or a stale one, is refused before pip runs."""
    text = str(source)
    with tempfile.TemporaryDirectory(dir=log.parent, prefix="farm-wheel-") as scratch:
        if text.startswith(("https://", "http://")):
            index = f"{text.rstrip('/')}/{required.cuda}/torch{required.torch}/"
            args: list[str | Path] = ["--index-url", index, required.pin]
        else:
            copy = _recorded_copy(Path(text), required, Path(scratch), for_wheel=for_wheel)
            if copy is None:
                raise _not_held(required, text, log=log, for_wheel=for_wheel)
            args = ["--no-index", copy]
        try:
            envs.pip_install(py, "--no-deps", "--only-binary", ":all:", *args, log=log, run=run)
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
