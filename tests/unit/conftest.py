"""Unit-test fixtures and hooks: subprocesses and sockets raise (cibuildwheel's mock_protection
habit; real tools run in tests/integration). Plain helpers live in tests/unit/helpers/."""

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
from tests.runner import Recorder
from tests.unit.helpers.roots import frozen_grid
from tests.unit.helpers.wheels import _wheel_hostile
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.load import FILES, load_matrix
from wheelfarm.matrix.model import Matrix


@pytest.fixture(autouse=True)
def _forbid_outside_world(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        msg = f"unit tests must not start processes or open sockets: {args!r}"
        raise AssertionError(msg)

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


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


@pytest.fixture(scope="module")
def shipped() -> Matrix:
    return load_matrix(REPO)


@pytest.fixture
def ran() -> Recorder:
    """The runner both platforms are made with here: it records their commands."""
    return Recorder()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("unpack") / "case"


@pytest.fixture(scope="module")
def good_wheel(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return _wheel_hostile(tmp_path_factory.mktemp("wheel")).read_bytes()
