"""index/coverage.py: the wheels a GPU check holds back, read from an index's packages.json
(`wheelfarm coverage --existing` prints each with its failure), and docs/comfyui.md's table:
what the plan offers win_amd64 per torch, written between its markers."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.core.errors import UsageError
from wheelfarm.core.root import FarmRoot
from wheelfarm.index.coverage import OFFER_END, OFFER_START, held_back, offer, write_offer
from wheelfarm.matrix.expand import Expansion, expand
from wheelfarm.matrix.load import load_matrix


@cache
def _catalog() -> Expansion:
    return expand(load_matrix(REPO))


def _rows(table: str) -> dict[str, list[str]]:
    lines = table.splitlines()
    return {c[0]: c[1:] for c in ([x.strip() for x in row.strip("|").split("|")] for row in lines)}


def test_the_offer_reads_each_torch_from_the_plan_and_adds_the_newest() -> None:
    rows = _rows(offer(_catalog(), ["2.9", "2.8"]))
    assert rows["package"] == ["torch 2.8", "torch 2.9", "torch 2.15"]
    assert rows["torchsparse"] == ["—", "—", "—"]  # Linux only
    natten = rows["natten"]  # CUDA 13 only on Windows: nothing on torch 2.8, cu130 alone on 2.9
    assert natten[0] == "—" and natten[1].startswith("0.21.7: cu130;")
    sage = rows["sageattention"]  # per torch on 2.8 and 2.9 (post3), the stable ABI from 2.10
    assert [s.split(":")[0] for s in sage] == ["2.2.0.post3", "2.2.0.post3", "2.2.0.post6"]
    assert rows["cubvh"][0] == "0.1.2: cu126, cu128, cu129; py 3.9\N{EN DASH}3.13"


def test_write_offer_rewrites_only_between_its_markers(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    doc = docs / "comfyui.md"
    doc.write_text(f"intro\n\n{OFFER_START} 2.8 -->\n| stale |\n{OFFER_END}\n\nafter\n")
    assert write_offer(_catalog(), FarmRoot(tmp_path)) == [doc]
    text = doc.read_text()
    assert text.startswith(f"intro\n\n{OFFER_START} 2.8 -->\n| package | torch 2.8 | torch 2.15 |")
    assert text.endswith(f"{OFFER_END}\n\nafter\n") and "| stale |" not in text
    assert offer(_catalog(), ["2.8"]) in text


def test_write_offer_refuses_a_marker_without_torch_minors(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "comfyui.md").write_text(f"{OFFER_START} latest -->\n{OFFER_END}\n")
    with pytest.raises(UsageError, match=r"'<!-- offer:start torch latest -->' must name torch"):
        write_offer(_catalog(), FarmRoot(tmp_path))


def test_write_offer_leaves_a_root_without_the_page_alone(tmp_path: Path) -> None:
    assert write_offer(_catalog(), FarmRoot(tmp_path)) == []


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
