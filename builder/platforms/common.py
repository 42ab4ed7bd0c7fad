"""What every repair tool run shares: write into a temporary folder, keep exactly one wheel."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from wheelfarm.cmd import call
from wheelfarm.errors import BuildError


def repair_with(
    tool: Sequence[str | Path],
    wheel: Path,
    out_dir: Path,
    *,
    log: Path,
    env: Mapping[str, str] | None = None,
) -> Path:
    """Run `tool ... -w TMP WHEEL`; move its one wheel into `out_dir`. A failed or odd repair
    leaves nothing behind in `out_dir`."""
    with tempfile.TemporaryDirectory(prefix="wheelfarm-repair-") as tmp:
        call([*tool, "-w", tmp, wheel], env=env, log=log)
        made = list(Path(tmp).glob("*.whl"))
        if len(made) != 1:
            msg = f"repair produced {len(made)} wheels from {wheel.name}; log: {log}"
            raise BuildError(msg)
        out_dir.mkdir(parents=True, exist_ok=True)
        return Path(shutil.move(made[0], out_dir / made[0].name))
