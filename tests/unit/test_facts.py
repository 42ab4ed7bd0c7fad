"""Tests of what facts does (filed by module: tests/README.md)."""

from __future__ import annotations

from tests.roots import REPO
from wheelfarm.matrix.facts import load_facts
from wheelfarm.matrix.load import load_matrix


def test_the_matrix_holds_every_file_once_loaded() -> None:
    matrix = load_matrix(REPO)
    assert matrix.facts == load_facts(REPO)
    assert matrix.facts.drivers["13"] == ("580.65.06", "580.88")
    assert "libcudart.so.*" in matrix.facts.libraries.provided["linux"]
    assert "cu130" in matrix.facts.toolkits.toolkits
    assert "13.0" in matrix.facts.compat.cuda
