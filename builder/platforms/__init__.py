"""Per-OS repair behind one protocol, dispatched through a dict keyed by the core platform
registry (cibuildwheel's habit)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from wheelfarm.builder.platforms import linux, windows
from wheelfarm.builder.platforms.common import RepairJob
from wheelfarm.core.platforms import PLATFORMS, OsName

__all__ = ["REPAIRERS", "RepairJob", "Repairer"]


class Repairer(Protocol):
    def repair(self, job: RepairJob) -> Path:
        """Vendor what the wheel needs except torch/CUDA libraries; return the repaired wheel."""
        ...


_BY_OS: dict[OsName, Repairer] = {"linux": linux.Linux(), "windows": windows.Windows()}
REPAIRERS: dict[str, Repairer] = {name: _BY_OS[p.os] for name, p in PLATFORMS.items()}
