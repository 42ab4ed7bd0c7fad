"""Tests of what relabel does (filed by module: tests/README.md)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest

from tests.unit.helpers.wheels import _wheel
from wheelfarm.builder.relabel import relabel
from wheelfarm.core.errors import BuildError


def test_relabel_refuses_a_different_existing_label(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="already has local version 'cu126'"):
        relabel(_wheel(tmp_path, "1.0+cu126"), "cu130torch2.14", tmp_path / "out")


def _metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as zf:
        (meta,) = (n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return zf.read(meta).decode()


def test_a_minors_wheel_replaces_the_label_its_compile_set(tmp_path: Path) -> None:
    """One compile serves cu130 and cu132 (ADR 19): a package that sets the label natively
    (causal-conv1d's CAUSAL_CONV1D_LOCAL_VERSION) wrote the compile's; cu132's wheel has its own."""
    compiled = _wheel(tmp_path, "1.0+cu130torch2.15")
    out = relabel(compiled, "cu132torch2.15", tmp_path / "out", compiled="cu130torch2.15")
    assert out.name == "demo_pkg-1.0+cu132torch2.15-cp312-cp312-linux_x86_64.whl"
    assert "Version: 1.0+cu132torch2.15\n" in _metadata(out)
    with zipfile.ZipFile(out) as zf:
        assert "demo_pkg-1.0+cu132torch2.15.dist-info/RECORD" in zf.namelist()


def test_only_the_compiles_own_label_is_replaced(tmp_path: Path) -> None:
    compiled = _wheel(tmp_path, "1.0+cu126torch2.15")
    with pytest.raises(
        BuildError, match=re.escape("expected none or 'cu132torch2.15' or 'cu130torch2.15'")
    ):
        relabel(compiled, "cu132torch2.15", tmp_path / "out", compiled="cu130torch2.15")


def test_a_per_cuda_name_follows_its_minor_with_its_farm_requirement(tmp_path: Path) -> None:
    """spconv-cu130 compiled for cu132 becomes spconv-cu132, requiring cumm-cu132, not cu130."""
    headers = "Requires-Dist: cumm-cu130<0.9.0,>=0.8.2\nRequires-Dist: numpy\n"
    compiled = _wheel(tmp_path, "1.0", headers)
    out = relabel(
        compiled,
        "cu132",
        tmp_path / "out",
        ("cumm-cu132==0.8.2",),
        name="demo-pkg-cu132",
        replacing=("cumm-cu130",),
    )
    assert out.name == "demo_pkg_cu132-1.0+cu132-cp312-cp312-linux_x86_64.whl"
    meta = _metadata(out)
    assert "Name: demo-pkg-cu132\n" in meta
    assert "cumm-cu130" not in meta
    assert "Requires-Dist: cumm-cu132==0.8.2" in meta
    assert "Requires-Dist: numpy" in meta
    with zipfile.ZipFile(out) as zf:
        assert all(not n.startswith("demo_pkg-") for n in zf.namelist())
        assert "demo_pkg_cu132-1.0+cu132.dist-info/METADATA" in zf.namelist()
