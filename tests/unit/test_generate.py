"""Generated files stay in step with their generators (see CONTRIBUTING.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.unit.helpers.install import _helper
from wheelfarm.generate import main as generate
from wheelfarm.generate import stale
from wheelfarm.index.coverage import END, OFFER_START, START, coverage, markdown, offer, summary
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

ROOT = Path(__file__).parents[2]


def test_coverage_docs_match_the_matrix() -> None:
    """`wheelfarm coverage --write-docs` regenerates both; nothing is published from this repo's
    own CI, so the committed tables count every planned build as missing. The README holds one
    summary line, not the table."""
    rows = coverage(expand(load_matrix(REPO)), set())
    assert markdown(rows) in (ROOT / "docs" / "coverage.md").read_text()
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index(START) : readme.index(END)]
    assert block == f"{START}\n## Coverage\n\n{summary(rows)}"
    assert block.count("\n") == 4 and "| package |" not in block


def test_the_comfyui_table_matches_the_matrix() -> None:
    """The same command writes docs/comfyui.md's table, for the torch its marker names."""
    doc = (ROOT / "docs" / "comfyui.md").read_text()
    marker = f"{OFFER_START} 2.8 2.9 -->\n"
    assert marker + offer(expand(load_matrix(REPO)), ["2.8", "2.9"]) in doc


def test_the_install_helpers_driver_table_is_drivers_yaml() -> None:
    """`python -m wheelfarm.generate` writes it; the helper's own table is what doctor, the
    farm and the helper agree on."""
    matrix = load_matrix(REPO)
    assert stale(matrix) == []
    assert matrix.facts.drivers == _helper().DRIVER_FLOORS


def test_the_generator_rewrites_a_stale_table_and_check_names_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fork = tmp_path / "fork"
    shutil.copytree(REPO.matrix, fork / "matrix")
    (fork / "scripts").mkdir()
    shutil.copy(REPO.install_helper, fork / "scripts")
    drivers = fork / "matrix" / "drivers.yaml"
    drivers.write_text(drivers.read_text().replace('"580.65.06"', '"590.1.2"'))
    before = (fork / "scripts" / "wheelfarm_install.py").read_text()
    assert generate(["--root", str(fork), "--check"]) == 1
    assert "wheelfarm_install.py is stale" in caplog.text
    assert generate(["--root", str(fork)]) == 0
    after = (fork / "scripts" / "wheelfarm_install.py").read_text()
    assert after == before.replace('"13": ("580.65.06",', '"13": ("590.1.2",')
    assert generate(["--root", str(fork), "--check"]) == 0
