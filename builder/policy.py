"""The library policy (matrix/libraries.yaml) as data: what torch provides, what the system has."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache

import yaml

from wheelfarm.matrix.load import MATRIX_DIR


@dataclass(frozen=True)
class LibraryPolicy:
    provided: tuple[str, ...]
    system: tuple[str, ...]

    def is_provided(self, name: str) -> bool:
        """Torch or the CUDA runtime bring this library: never vendor it."""
        return any(fnmatchcase(name, p) for p in self.provided)

    def is_system(self, name: str) -> bool:
        return any(fnmatchcase(name.lower(), p.lower()) for p in self.system)


@cache
def library_policy(os_name: str) -> LibraryPolicy:
    """os_name: 'linux' or 'windows'."""
    data = yaml.safe_load((MATRIX_DIR / "libraries.yaml").read_text(encoding="utf-8"))
    return LibraryPolicy(tuple(data["provided"][os_name]), tuple(data["system"][os_name]))
