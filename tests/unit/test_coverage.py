"""index/coverage.py: the wheels a GPU check holds back, read from an index's packages.json
(`wheelfarm coverage --existing` prints each with its failure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wheelfarm.core.errors import UsageError
from wheelfarm.index.coverage import held_back


def test_held_back_wheels_come_with_their_failure(tmp_path: Path) -> None:
    manifest = tmp_path / "packages.json"
    wheels = [
        {"filename": "b.whl", "unfiled": "held back: its kernels failed on sm_90, H100: x"},
        {"filename": "a.whl", "unfiled": "held back: kernels not run on a GPU yet (...)"},
        {"filename": "c.whl", "unfiled": "a +cpu wheel (not a CUDA build)"},
        {"filename": "d.whl", "unfiled": None},
        "not an entry",
    ]
    manifest.write_text(json.dumps({"wheels": wheels}), encoding="utf-8")
    assert held_back(manifest) == [
        ("a.whl", "held back: kernels not run on a GPU yet (...)"),
        ("b.whl", "held back: its kernels failed on sm_90, H100: x"),
    ]
    assert held_back(tmp_path) == []  # a wheelhouse: nothing is held there
    assert held_back(None) == []
    manifest.write_text("{", encoding="utf-8")
    with pytest.raises(UsageError, match=r"is not a wheelfarm packages\.json"):
        held_back(manifest)
