"""Tests of what manifest does (filed by module: tests/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.helpers.wheels import W, index, wheel
from wheelfarm.core.errors import SiteError
from wheelfarm.index import manifest
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.manifest import MANIFEST


def test_packages_json_is_read_a_piece_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pieces of a few characters cut strings, numbers and objects; the names come out whole."""
    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    for python in ("cp310-cp310", "cp311-cp311", "cp312-cp312"):
        wheel(house, W.replace("cp312-cp312", python))
    assert index(house, out) == 0
    listed = [w["filename"] for w in json.loads((out / MANIFEST).read_text())["wheels"]]
    for piece in (1, 7, 1 << 20):
        monkeypatch.setattr(manifest, "READ_PIECE", piece)
        assert list(manifest.published(out)) == listed
    spaced = json.dumps(json.loads((out / MANIFEST).read_text()), indent=2)
    (out / MANIFEST).write_text(spaced)
    monkeypatch.setattr(manifest, "READ_PIECE", 5)
    assert list(manifest.published(out)) == listed


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"version":1,"wheels":[{"filename":"x"', "not a wheelfarm packages.json"),
        ('{"version":1,"wheels":[]}{}', "not a wheelfarm packages.json"),
        ('{"version":1}', "not a wheelfarm packages.json"),
        ('{"version":2,"wheels":[]}', "manifest version 2, this wheelfarm reads 1"),
        ('{"wheels":[]}', "manifest version None"),
        ("[]", "not a wheelfarm packages.json"),
    ],
)
def test_a_broken_packages_json_is_refused(text: str, match: str, tmp_path: Path) -> None:
    (tmp_path / MANIFEST).write_text(text)
    with pytest.raises(SiteError, match=match), Catalog() as wheels:
        wheels.missing(manifest.published(tmp_path))
