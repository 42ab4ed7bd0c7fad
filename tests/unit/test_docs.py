"""Every install command README and the docs print is held to the catalog: a farm package's
version is one the matrix plans, a `+cuXYZtorchM.m` label or a `cuXYZ/torchM.m/` index is a cell
the matrix plans for it, a farm index comes with the full local pin and with PyTorch's index for
its CUDA (or the user's torch pinned), and a `torch==X+cuXYZ` pin is a build torch.yaml lists;
a farm wheel's file name is held to the same. The ADRs are dated records and stay as written, and
so does docs/packages.md: each command there is the one a measurement ran."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from tests.roots import REPO
from wheelfarm.core.label import Label
from wheelfarm.matrix.expand import Expansion, expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix

ROOT = Path(__file__).parents[2]
RECORDS = {"packages.md"}
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
DOCS += [p for p in sorted((ROOT / "docs").glob("*.md")) if p.name not in RECORDS]
INSTALLS = ("pip install", "uv pip install", "uv pip compile", "install.py", "uv add", "uvx ")
INSTALLS += ("pipx run", ".whl")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"`([^`\n]+(?:\n[^`\n]+)?)`")
PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][A-Za-z0-9.+!_-]*)")
WHEEL = re.compile(r"\b([A-Za-z0-9_]+)-([0-9][A-Za-z0-9.+!_]*)-(?:cp|py)[0-9]+-\S*\.whl")
FARM_INDEX = re.compile(r"/(cu\d{3})/torch(\d+\.\d+)/")


@dataclass(frozen=True)
class Catalog:
    matrix: Matrix
    expansion: Expansion

    @property
    def names(self) -> dict[str, str]:
        """Every name a farm wheel goes by (package or per-CUDA distribution) -> its package."""
        out = {b.distribution: b.package for b in self.expansion.builds}
        return out | {p.name: p.name for p in self.matrix.packages}

    def cells(self, package: str) -> set[tuple[str, str, str]]:
        """(version, cuda, torch minor) of every planned cell of a package."""
        return {(c.version, c.cuda, c.torch) for c in self.expansion.cells if c.package == package}


@cache
def catalog() -> Catalog:
    matrix = load_matrix(REPO)
    return Catalog(matrix, expand(matrix))


def commands(text: str) -> list[str]:
    """The install commands of a Markdown text: code-block lines and code spans that run pip,
    uv or install.py."""
    found = [line for block in FENCE.findall(text) for line in block.splitlines()]
    found += SPAN.findall(FENCE.sub("", text))
    return [c.replace("\n", " ") for c in found if any(i in c for i in INSTALLS)]


def problems(command: str, cat: Catalog) -> list[str]:
    """What a command says that the catalog does not plan, or that could move the user's torch."""
    out: list[str] = []
    text = command.replace('"', " ").replace("'", " ")
    names = cat.names
    pins = [(canonicalize_name(n), v) for n, v in PIN.findall(text) + WHEEL.findall(text)]
    farm = [(n, v) for n, v in pins if n in names]
    indexes = FARM_INDEX.findall(text)
    torch_free = True
    for name, version in farm:
        package = names[name]
        try:
            parsed = Version(version)
        except InvalidVersion:
            out.append(f"{name}=={version}: not a version")
            continue
        cells = cat.cells(package)
        if parsed.public not in {v for v, _, _ in cells}:
            out.append(f"{name}=={version}: the matrix plans {package} {_versions(cells)}")
            continue
        if parsed.local is None:
            continue
        label = Label.parse(parsed.local)
        torch_free = torch_free and label.torch is None
        planned = {(c, t) for v, c, t in cells if v == parsed.public}
        wanted = [(label.cuda, t) for _, t in indexes] if label.torch is None else [
            (label.cuda, label.torch)]  # fmt: skip
        cells_named = wanted or [(label.cuda, t) for c, t in planned if c == label.cuda][:1]
        out += [f"{name}=={version}: {package} {parsed.public} plans no {cell} cell"
                for cell in cells_named if cell not in planned]  # fmt: skip
        if label.torch is not None and indexes and (label.cuda, label.torch) not in indexes:
            out.append(f"{name}=={version} is not the cell of its index {indexes}")
    for cuda, torch in indexes:
        if "pip compile" in text:  # the pins are in its requirements file
            pass
        elif not [n for n, _ in pins if n != "torch"]:
            out.append(f"the farm index {cuda}/torch{torch}/ with no NAME==V+label pin")
        elif not any("+" in v for n, v in pins if n != "torch"):
            out.append(f"the farm index {cuda}/torch{torch}/ with a public pin: pin the label")
        torch_index = cat.matrix.torch_index(cuda)
        pinned_torch = any(n == "torch" for n, _ in pins)
        if not torch_free and torch_index not in text and not pinned_torch:
            out.append(f"{cuda}/torch{torch}/ without PyTorch's index {torch_index}")
    for name, version in pins:
        if name == "torch" and "+" in version:
            out += _torch_pin(version, cat.matrix)
    return out


def _versions(cells: set[tuple[str, str, str]]) -> str:
    return ", ".join(sorted({v for v, _, _ in cells}, key=Version)) or "no version"


def _torch_pin(version: str, matrix: Matrix) -> list[str]:
    public, _, cuda = version.partition("+")
    release = next((r for r in matrix.releases if str(r.version) == public), None)
    if release is None or cuda not in release.builds:
        return [f"torch=={version}: torch.yaml lists no such build"]
    return []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_install_command_in_the_docs_is_planned(doc: Path) -> None:
    found = {
        c: p for c in commands(doc.read_text(encoding="utf-8")) if (p := problems(c, catalog()))
    }
    assert found == {}


def test_the_check_refuses_an_unplanned_version_cell_or_a_command_that_moves_torch() -> None:
    """The guard itself: each of these was in the docs once (issue 50)."""
    site = "https://OWNER.github.io/REPO/cu130/torch2.14/"
    torch = "https://download.pytorch.org/whl/cu130"
    good = f'pip install "flash-attn==2.8.3.post2+cu130torch2.14" --extra-index-url {site} --extra-index-url {torch}'
    assert problems(good, catalog()) == []
    bad = {
        good.replace("2.8.3.post2", "2.8.3"): "the matrix plans flash-attn 2.8.3.post2",
        good.replace("torch2.14", "torch2.3"): "plans no ('cu130', '2.3') cell",
        good.replace(f" --extra-index-url {torch}", ""): "without PyTorch's index",
        f"pip install flash-attn --extra-index-url {site}": "with no NAME==V+label pin",
        'pip install "torch==2.14.1+cu999"': "torch.yaml lists no such build",
        "gh attestation verify flash_attn-2.8.3+cu130torch2.14-cp312-cp312-x.whl": "plans flash-attn",
        f'pip install "flash-attn==2.8.3.post2+cu130torch2.13" --extra-index-url {site} x {torch}': "is not the cell of its index",
    }
    for command, says in bad.items():
        assert any(says in p for p in problems(command, catalog())), command


def test_the_readme_headline_is_flash_attn_as_packaged() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    head = [c for c in commands(text[: text.index("## Quick start")]) if "==" in c]
    assert head and all("flash-attn==2.8.3.post2+cu130torch2.14" in c for c in head)
