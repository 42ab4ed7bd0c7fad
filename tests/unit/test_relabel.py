"""Tests of what relabel does (filed by module: tests/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.helpers.wheels import _wheel
from wheelfarm.builder.relabel import relabel
from wheelfarm.core.errors import BuildError


def test_relabel_refuses_a_different_existing_label(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="already has local version 'cu126'"):
        relabel(_wheel(tmp_path, "1.0+cu126"), "cu130torch2.14", tmp_path / "out")
