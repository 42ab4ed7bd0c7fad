"""The library policy (matrix/libraries.yaml, loaded and checked with the matrix) as matching
rules: what torch and the CUDA runtime provide, and what the system has."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from wheelfarm.core.platforms import OsName
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.facts import load_facts
from wheelfarm.matrix.model import Matrix


@dataclass(frozen=True)
class LibraryPolicy:
    provided: tuple[str, ...]
    system: tuple[str, ...]
    case_sensitive: bool  # ELF sonames are; Windows DLL names are not

    def fold(self, name: str) -> str:
        """The name as this OS's loader compares it: LIBZSTD.DLL is libzstd.dll on Windows."""
        return name if self.case_sensitive else name.lower()

    def matches(self, name: str, patterns: tuple[str, ...]) -> bool:
        """Whether name matches one of the glob patterns, in this OS's case rule."""
        return any(fnmatchcase(self.fold(name), self.fold(p)) for p in patterns)

    def is_provided(self, name: str) -> bool:
        """Torch or the CUDA runtime bring this library: never vendor it."""
        return self.matches(name, self.provided)

    def is_system(self, name: str) -> bool:
        return self.matches(name, self.system)


def library_policy(source: Matrix | FarmRoot, os_name: OsName) -> LibraryPolicy:
    """The policy for one OS: from a loaded matrix, or (for a caller holding only the root)
    from the fact files, read and checked through the matrix's reader."""
    facts = source.facts if isinstance(source, Matrix) else load_facts(source)
    libraries = facts.libraries
    return LibraryPolicy(
        libraries.provided[os_name],
        libraries.system[os_name],
        case_sensitive=os_name != "windows",
    )
