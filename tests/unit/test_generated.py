"""Generated files stay in step with their generators (see CONTRIBUTING.md)."""

from __future__ import annotations

from pathlib import Path

from tests.roots import REPO
from wheelfarm.index.coverage import END, START, coverage, markdown
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

ROOT = Path(__file__).parents[2]


def test_coverage_docs_match_the_matrix() -> None:
    """`wheelfarm coverage --write-docs` regenerates both; nothing is published from this repo's
    own CI, so the committed tables count every planned build as missing."""
    table = markdown(coverage(expand(load_matrix(REPO)), set()))
    assert table in (ROOT / "docs" / "coverage.md").read_text()
    readme = (ROOT / "README.md").read_text()
    assert table in readme[readme.index(START) : readme.index(END)]
