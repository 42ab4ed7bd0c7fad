"""Tests of what publish does (filed by module: tests/README.md)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ghsim.synthetic import sample_record
from wheelfarm.core.errors import PublishError
from wheelfarm.core.record import Timing, path_for
from wheelfarm.github import publish, releases
from wheelfarm.github.publish import PublishReport, asset_sha256


@pytest.mark.parametrize(
    ("digest", "sha"),
    [("sha256:" + "c" * 64, "c" * 64), ("md5:" + "c" * 32, None), ("sha256:zz", None), (7, None)],
)
def test_only_a_hex_sha256_digest_is_a_hash(digest: object, sha: str | None) -> None:
    assert asset_sha256({"digest": digest}) == sha


# --- publish: the exit reason ------------------------------------------------------------------
def test_a_report_with_wheels_left_or_missing_fails_naming_counts() -> None:
    assert PublishReport(uploaded=["a"]).failure(1) is None
    left = PublishReport(left=["x.whl", "y.whl"], stopped="rate limit").failure(5)
    assert left is not None and "3 of 5 wheels published and 2 left (rate limit)" in left
    missing = PublishReport(missing=["b1", "b2"]).failure(3)
    assert missing is not None and "2 planned build(s) have no wheel here" in missing
    assert "b1, b2" in missing and "re-run the failed jobs" in missing


def test_a_rebuild_publishes_the_same_record(tmp_path: Path) -> None:
    wheel = tmp_path / "w.whl"
    report = publish.PublishReport(uploaded=[wheel.name])
    seen = []
    for created in ("2026-01-01T00:00:00+00:00", "2026-02-01T00:00:00+00:00"):
        timing = Timing(created=created, steps_seconds={"compile": 81.0}, ccache={})
        path_for(wheel).write_text(sample_record(timing=timing).to_json())
        seen.append(publish._records([wheel], report))
    assert seen[0] == seen[1] == {wheel.name: sample_record().published().to_object()}
    assert "timing" not in seen[0][wheel.name]
    assert publish._records([wheel], publish.PublishReport()) == {}  # not uploaded: none


def test_a_record_changed_since_the_check_stops_publish_in_one_line(tmp_path: Path) -> None:
    wheel = tmp_path / "w.whl"
    path_for(wheel).write_text('{"version": 2}')
    with pytest.raises(PublishError, match=r"w\.whl\.build\.json: build_id is missing$"):
        publish._records([wheel], publish.PublishReport(uploaded=[wheel.name]))


def test_a_published_record_of_no_shape_is_skipped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = sample_record().published().to_object()
    assert releases._published_record(good, what="r") == sample_record().published()
    with caplog.at_level(logging.WARNING):
        assert (
            releases._published_record({**good, "archs_found": []}, what="records-1.json: 'w'")
            is None
        )
    assert "records-1.json: 'w': archs_found should be an object, not a list" in caplog.text
