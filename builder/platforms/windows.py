"""Windows: delvewheel repair with torch's and CUDA's DLLs excluded (they load with torch)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from wheelfarm.builder.platforms.common import RepairJob, repair_with


class Windows:
    def repair(self, job: RepairJob) -> Path:
        """Repair with delvewheel, which keeps the win_amd64 tag (job.plat is unused)."""
        excludes = os.pathsep.join(job.policy.provided)  # ';' on Windows
        add_path = ["--add-path", str(job.torch_lib)] if job.torch_lib is not None else []
        tool = [sys.executable, "-m", "delvewheel", "repair", "--no-mangle-all",
                "--exclude", excludes, *add_path]  # fmt: skip
        return repair_with(tool, job)
