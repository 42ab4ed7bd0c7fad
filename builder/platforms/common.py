"""What the platforms share: a repair job's inputs, running the repair tool into a temporary
folder so exactly one wheel, or nothing, reaches the output folder, and the compile shard's shim
and empty source."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from wheelfarm.core.errors import BuildError
from wheelfarm.core.proc import Runner, call
from wheelfarm.core.wheelfile import SOURCE_DATE_EPOCH

if TYPE_CHECKING:  # the ninja shim imports the platforms on every run: no matrix loader for it
    from wheelfarm.builder.policy import LibraryPolicy

SHIM_MODULE = "wheelfarm.builder.shard"  # the ninja shim: `-m` runs it, console() is its entry


@dataclass(frozen=True, kw_only=True)
class RepairJob:
    """One wheel to repair: where it goes, its platform tag, torch's libraries and the policy of
    what never to vendor."""

    wheel: Path
    out_dir: Path
    plat: str
    torch_lib: Path | None
    policy: LibraryPolicy
    log: Path


def repair_with(
    tool: Sequence[str | Path],
    job: RepairJob,
    *,
    env: Mapping[str, str] | None = None,
    run: Runner = call,
) -> Path:
    """Run `tool ... -w TMP WHEEL`; move its one wheel into the job's out_dir. A failed or odd
    repair leaves nothing behind there."""
    # auditwheel and delvewheel stamp the wheel they write with SOURCE_DATE_EPOCH when it is
    # set, else with the current time: fixed, a rebuild gives the same bytes
    stamped = {**(os.environ if env is None else env), "SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH)}
    with tempfile.TemporaryDirectory(prefix="wheelfarm-repair-") as tmp:
        run([*tool, "-w", tmp, job.wheel], env=stamped, log=job.log)
        made = list(Path(tmp).glob("*.whl"))
        if len(made) != 1:
            msg = f"repair produced {len(made)} wheels from {job.wheel.name}; log: {job.log}"
            raise BuildError(msg)
        job.out_dir.mkdir(parents=True, exist_ok=True)
        return Path(shutil.move(made[0], job.out_dir / made[0].name))


@dataclass(frozen=True)
class Views:
    """What the compiler wrappers do with the torch env's header folders (builder/ccache.py):
    rewrite each argument naming a folder in `rewrite` to its view, and add `-I` of each of
    `include` (the folders CPATH would hold)."""

    rewrite: dict[str, str] = field(default_factory=dict)
    include: tuple[Path, ...] = ()


def empty_source(work: Path) -> Path:
    """The C source of a compile shard's empty object."""
    src = work / "empty.c"
    src.write_text("/* stub object of a compile shard */\n", encoding="utf-8")
    return src


def append_nvcc_flags(env: Mapping[str, str], flags: tuple[str, ...]) -> dict[str, str]:
    """NVCC_APPEND_FLAGS with `flags` (a platform's `nvcc_flags`) after any value already set
    (none: no change); a package's own env, applied later, still has the last word."""
    if not flags:
        return {}
    return {"NVCC_APPEND_FLAGS": " ".join(filter(None, [env.get("NVCC_APPEND_FLAGS"), *flags]))}
