"""Windows: delvewheel repair with torch's and CUDA's DLLs excluded (they load with torch)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from wheelfarm.builder.platforms.common import repair_with
from wheelfarm.builder.policy import library_policy


class Windows:
    os_name = "windows"

    def repair(
        self, wheel: Path, out_dir: Path, *, plat: str, torch_lib: Path | None, log: Path
    ) -> Path:
        del plat  # delvewheel keeps win_amd64
        excludes = os.pathsep.join(library_policy("windows").provided)  # ';' on Windows
        add_path = ["--add-path", str(torch_lib)] if torch_lib is not None else []
        tool = [sys.executable, "-m", "delvewheel", "repair", "--no-mangle-all",
                "--exclude", excludes, *add_path]  # fmt: skip
        return repair_with(tool, wheel, out_dir, log=log)
