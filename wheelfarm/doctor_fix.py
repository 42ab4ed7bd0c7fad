"""doctor's fixes: each is a command that works, or says what does not exist. A torch fix
installs torch's own CUDA build from PyTorch's index for that CUDA (torch.yaml's `index_url`),
never PyPI's (on Windows its CPU build), run by the interpreter doctor checks; a wheel fix is the
farm's install command for the wheel of the user's own cell, where the matrix plans one (on the
`--index` site; without one it names the wheel and its index folder), else why there is none
(what torch ships, a package file's exclusion)."""

from __future__ import annotations

from dataclasses import dataclass, field

from wheelfarm import axes
from wheelfarm.core.commands import install_commands, shell_word
from wheelfarm.core.errors import WheelfarmError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.expand import Expansion, expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix, Package

Machine = dict[str, "str | None"]  # doctor's `cell(env)`: cuda, torch, python, platform


@dataclass
class Remedy:
    """What the fixes need: the farm root (its matrix, read when a fix asks), the interpreter as
    the user named it (`--python`) and the farm's site (`--index`; None when not given)."""

    root: FarmRoot
    python: str
    site: str | None = None
    _grid: tuple[Matrix, Expansion] | None = field(default=None, repr=False)

    def grid(self) -> tuple[Matrix, Expansion] | None:
        """The matrix and its expansion, loaded once; None for a root without a readable one."""
        if self._grid is None:
            try:
                matrix = load_matrix(self.root)
            except WheelfarmError:
                return None
            self._grid = (matrix, expand(matrix))
        return self._grid

    def torch(self, minor: str, cuda: str) -> str:
        """The command that installs torch `minor`'s `cuda` build from PyTorch's index, or which
        of the two torch does not ship."""
        grid = self.grid()
        if grid is None:
            return f"install torch {minor}'s {cuda} build from PyTorch's index"
        matrix = grid[0]
        release = next((r for r in matrix.releases if r.minor == minor), None)
        if release is None or cuda not in release.builds:
            shipped = ", ".join(release.builds) if release else "none in the farm's grid"
            return f"torch {minor} ships no {cuda} build (it ships {shipped})"
        return (
            f'{shell_word(self.python)} -m pip install "torch=={release.version}+{cuda}" '
            f"--index-url {matrix.torch_index(cuda)}"
        )

    def wheel(self, name: str, version: str, cell: Machine) -> str:
        """The install command of the farm's `name` `version` wheel for the user's `cell`, or
        why the farm plans none there; "" for a cell without a CUDA torch (no wheel fits it)."""
        grid = self.grid()
        if None in cell.values():  # no torch, or a CPU one: the torch fixes come first
            return ""
        if grid is None:
            return f"install the {name} wheel built for your torch, CUDA, Python and platform"
        matrix, expansion = grid
        package = axes.find_package(matrix, name)
        if package is None:
            return f"the farm plans no {name} wheel: {name} is none of its packages"
        want = axes.Wanted(package=package.name, version=version,
                           **{k: str(v) for k, v in cell.items()})  # fmt: skip
        cell_id = want.id
        build = next((b for b in expansion.builds if any(c.id == cell_id for c in b.covers)), None)
        if build is None:
            return f"the farm plans no {name} {version} wheel for {want.cell_text()}: " + (
                axes.grid_problem(matrix, want) or self._excluded(expansion, cell_id, package)
            ).rstrip(".")
        full = f"{build.version}+{build.label}"
        if self.site is None:
            return (
                f"install the farm's {build.distribution}=={full} from the {want.cuda}/torch"
                f"{want.torch}/ index of its site (`wheelfarm doctor {name} --index SITE` "
                f"prints the command)"
            )
        torch = matrix.torch_index(want.cuda) if build.torch_minor else None
        index = f"{self.site}{want.cuda}/torch{want.torch}/"
        return install_commands(build.distribution, full, index, torch, python=self.python).pip

    @staticmethod
    def _excluded(expansion: Expansion, cell_id: str, package: Package) -> str:
        found = next((e for e in expansion.excluded if e.cell.id == cell_id), None)
        if found is None:
            return f"{package.name} {cell_id} is no cell of its plan"
        return axes.exclusion(found, package)
