"""Windows: delvewheel repair with torch's and CUDA's DLLs excluded (they load with torch)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from wheelfarm.builder.policy import library_policy

from wheelfarm.cmd import call
from wheelfarm.errors import BuildError


class Windows:
    os_name = "windows"

    def repair(
        self, wheel: Path, out_dir: Path, *, plat: str, torch_lib: Path | None, log: Path
    ) -> Path:
        del plat  # delvewheel keeps win_amd64
        excludes = os.pathsep.join(library_policy("windows").provided)  # delvewheel: ';' on Windows
        add_path = ["--add-path", str(torch_lib)] if torch_lib is not None else []
        with tempfile.TemporaryDirectory(prefix="wheelfarm-repair-") as tmp:
            call(
                [
                    sys.executable,
                    "-m",
                    "delvewheel",
                    "repair",
                    "--no-mangle-all",
                    "-w",
                    tmp,
                    "--exclude",
                    excludes,
                    *add_path,
                    wheel,
                ],
                log=log,
            )
            made = list(Path(tmp).glob("*.whl"))
            if len(made) != 1:
                msg = f"delvewheel produced {len(made)} wheels from {wheel.name}; log: {log}"
                raise BuildError(msg)
            out_dir.mkdir(parents=True, exist_ok=True)
            return Path(shutil.move(made[0], out_dir / made[0].name))
