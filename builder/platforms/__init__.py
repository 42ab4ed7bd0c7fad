"""Per-platform steps behind one protocol, dispatched through a dict (cibuildwheel's habit)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from wheelfarm.builder.platforms import linux, windows


class Platform(Protocol):
    os_name: str

    def repair(
        self, wheel: Path, out_dir: Path, *, plat: str, torch_lib: Path | None, log: Path
    ) -> Path:
        """Vendor what the wheel needs except torch/CUDA libraries; return the repaired wheel."""
        ...


PLATFORMS: dict[str, Platform] = {
    "linux_x86_64": linux.Linux(),
    "linux_aarch64": linux.Linux(),
    "win_amd64": windows.Windows(),
}
