"""The library policy (matrix/libraries.yaml of the farm root) as data: what torch and the CUDA
runtime provide, and what the system has."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path

from wheelfarm.core.platforms import OsName
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.load import parse_yaml


@dataclass(frozen=True)
class LibraryPolicy:
    provided: tuple[str, ...]
    system: tuple[str, ...]
    case_sensitive: bool  # ELF sonames are; Windows DLL names are not

    def _match(self, name: str, patterns: tuple[str, ...]) -> bool:
        if not self.case_sensitive:
            name, patterns = name.lower(), tuple(p.lower() for p in patterns)
        return any(fnmatchcase(name, p) for p in patterns)

    def is_provided(self, name: str) -> bool:
        """Torch or the CUDA runtime bring this library: never vendor it."""
        return self._match(name, self.provided)

    def is_system(self, name: str) -> bool:
        return self._match(name, self.system)


@cache
def _load(path: Path, os_name: OsName) -> LibraryPolicy:
    data, _ = parse_yaml(path.read_text(encoding="utf-8"))
    return LibraryPolicy(
        tuple(data["provided"][os_name]),
        tuple(data["system"][os_name]),
        case_sensitive=os_name != "windows",
    )


def library_policy(root: FarmRoot, os_name: OsName) -> LibraryPolicy:
    """The policy for one OS, read once per farm root."""
    return _load(root.matrix / "libraries.yaml", os_name)
