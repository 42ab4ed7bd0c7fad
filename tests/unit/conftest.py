"""Unit tests never reach the outside world: subprocesses and sockets raise (cibuildwheel's
mock_protection habit). Real tools run in tests/integration."""

from __future__ import annotations

import shutil
import socket
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.roots import REPO
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.load import FILES


@pytest.fixture(autouse=True)
def _forbid_outside_world(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        msg = f"unit tests must not start processes or open sockets: {args!r}"
        raise AssertionError(msg)

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


GRID_UP_TO = "2.14"  # the torch minor the unit tests' numbers were worked out against


def frozen_grid() -> str:
    """The shipped torch.yaml without the releases after GRID_UP_TO: a torch release added to
    the grid moves no number a unit test pins (its comments and lines stay as shipped)."""
    text = (REPO.matrix / "torch.yaml").read_text(encoding="utf-8")
    cut = text.find(f'  - torch: "{GRID_UP_TO}.')
    later = text.find("  - torch:", text.index("\n", cut))
    return text if later == -1 else text[:later]


@pytest.fixture
def matrix_dir(tmp_path: Path) -> Callable[..., FarmRoot]:
    """A farm root with the shipped grid and schemas and the given package files (name -> YAML)."""

    def make(packages: dict[str, str], **overrides: str) -> FarmRoot:
        farm = FarmRoot(tmp_path / "farm")
        root = farm.matrix
        (root / "packages").mkdir(parents=True)
        shutil.copytree(REPO.schemas, farm.schemas)
        shutil.copytree(REPO.patches, farm.patches)
        for name in (f"{stem}.yaml" for stem in FILES):
            text = overrides.get(name.removesuffix(".yaml"))
            if text is None and name == "torch.yaml":
                (root / name).write_text(frozen_grid(), encoding="utf-8")
            elif text is None:
                shutil.copy(REPO.matrix / name, root / name)
            else:
                (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
        for name, text in packages.items():
            (root / "packages" / f"{name}.yaml").write_text(text, encoding="utf-8")
        return farm

    return make


MINIMAL = """\
name: {name}
versions:
  - version: "1.0.0"
    source: {{sdist: {name}, sha256: "{sha}"}}
abi: {abi}
arch: {{via: torch}}
import: [{module}]
build_minutes_per_arch: 1
"""


def package_yaml(name: str = "demo-pkg", abi: str = "{kind: cpython}", extra: str = "") -> str:
    """MINIMAL with `extra`'s top-level keys in place of its own (duplicate keys are refused)."""
    extra = textwrap.dedent(extra)
    keys = {line.split(":", 1)[0] for line in extra.splitlines() if line[:1].isalpha()}
    body = MINIMAL.format(name=name, sha="a" * 64, abi=abi, module=name.replace("-", "_"))
    kept = [line for line in body.splitlines(keepends=True) if line.split(":", 1)[0] not in keys]
    return "".join(kept) + extra
