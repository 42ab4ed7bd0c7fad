"""What every repair shares: the job's inputs, and running the tool into a temporary folder so
exactly one wheel, or nothing, reaches the output folder."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from wheelfarm.builder.policy import LibraryPolicy
from wheelfarm.core.errors import BuildError
from wheelfarm.core.proc import call
from wheelfarm.core.wheelfile import SOURCE_DATE_EPOCH


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
    tool: Sequence[str | Path], job: RepairJob, *, env: Mapping[str, str] | None = None
) -> Path:
    """Run `tool ... -w TMP WHEEL`; move its one wheel into the job's out_dir. A failed or odd
    repair leaves nothing behind there."""
    # auditwheel and delvewheel stamp the wheel they write with SOURCE_DATE_EPOCH when it is
    # set, else with the current time: fixed, a rebuild gives the same bytes
    stamped = {**(os.environ if env is None else env), "SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH)}
    with tempfile.TemporaryDirectory(prefix="wheelfarm-repair-") as tmp:
        call([*tool, "-w", tmp, job.wheel], env=stamped, log=job.log)
        made = list(Path(tmp).glob("*.whl"))
        if len(made) != 1:
            msg = f"repair produced {len(made)} wheels from {job.wheel.name}; log: {job.log}"
            raise BuildError(msg)
        job.out_dir.mkdir(parents=True, exist_ok=True)
        return Path(shutil.move(made[0], job.out_dir / made[0].name))
