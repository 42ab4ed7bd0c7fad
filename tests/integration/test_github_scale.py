"""The whole shipped plan through the workflows' job graph against a GitHub that enforces its
documented limits (tests/simulation.py), with the faults of a real first run: nothing is lost,
every planned build ends up published and indexed, and no limit is passed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.simulation import ATTEST_SUBJECTS, Faults, simulate

pytestmark = pytest.mark.integration


def test_a_first_run_at_github_scale_survives_its_faults(tmp_path: Path) -> None:
    outcome = simulate(tmp_path, Path(sys.executable).parent, Faults())
    assert outcome.planned > 1000  # the shipped plan, every build
    assert outcome.published == outcome.planned
    assert outcome.lost == 0
    assert outcome.site_wheels == outcome.planned  # the last deploy lists everything
    assert outcome.max_content_per_hour <= 500
    assert outcome.attest_max <= ATTEST_SUBJECTS
    assert outcome.requests / outcome.planned < 3  # listings, not a download per wheel
    assert outcome.runs == 3
