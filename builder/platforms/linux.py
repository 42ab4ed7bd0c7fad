"""Linux: auditwheel repair, excluding what torch and the CUDA runtime provide."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from wheelfarm.builder.policy import library_policy

from wheelfarm.cmd import call
from wheelfarm.errors import BuildError


class Linux:
    os_name = "linux"

    def repair(
        self, wheel: Path, out_dir: Path, *, plat: str, torch_lib: Path | None, log: Path
    ) -> Path:
        """Repair into a temporary folder so a failed repair leaves no partial wheel behind."""
        excludes = [
            arg for pattern in library_policy("linux").provided for arg in ("--exclude", pattern)
        ]
        env = dict(os.environ)
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        if torch_lib is not None:
            env["LD_LIBRARY_PATH"] = f"{torch_lib}{os.pathsep}{env.get('LD_LIBRARY_PATH', '')}"
        with tempfile.TemporaryDirectory(prefix="wheelfarm-repair-") as tmp:
            call(
                [
                    sys.executable,
                    "-m",
                    "auditwheel",
                    "repair",
                    "--plat",
                    plat,
                    "-w",
                    tmp,
                    *excludes,
                    wheel,
                ],
                env=env,
                log=log,
            )
            made = list(Path(tmp).glob("*.whl"))
            if len(made) != 1:
                msg = f"auditwheel produced {len(made)} wheels from {wheel.name}; log: {log}"
                raise BuildError(msg)
            out_dir.mkdir(parents=True, exist_ok=True)
            return Path(shutil.move(made[0], out_dir / made[0].name))
