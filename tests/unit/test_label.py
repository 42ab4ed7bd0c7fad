"""Tests of what label does (filed by module: tests/README.md)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from tests.unit.helpers.strategies import FEW, _outcome
from wheelfarm.core.label import Label, OtherLabel, cuda_tag, cuda_version
from wheelfarm.index.entries import read_label


@pytest.mark.parametrize(
    ("local", "expected"),
    [
        ("cu124torch24", OtherLabel("cu124", "2.4")),
        ("cu124torch2.5gite2743ab", OtherLabel("cu124", "2.5")),
        ("cu12torch2.8cxx11abitrue", OtherLabel("cu12", "2.8", cxx11abi=True)),
        ("pt27cu128", OtherLabel("cu128", "2.7")),
    ],
)
def test_other_farms_label_shapes(local: str, expected: OtherLabel) -> None:
    assert OtherLabel.parse(local) == expected


LABEL_TEXT = st.one_of(
    st.text(max_size=24),
    st.from_regex(r"\Acu\d{2,4}(torch\d{1,2}\.\d{1,3}(\.stable)?)?\Z"),  # \d: any script's digits
)


@FEW
@given(text=LABEL_TEXT)
def test_label_parse_is_a_label_or_value_error(text: str) -> None:
    label = _outcome(lambda: Label.parse(text), ValueError)
    if isinstance(label, ValueError):
        assert read_label(text) is None
        return
    assert str(label) == text
    assert read_label(text) == label
    cuda_version(label.cuda)  # a parsed label's CUDA tag is always one cuda_version reads


@FEW
@given(text=st.text(max_size=12) | st.from_regex(r"\Acu[0-9]{1,4}\Z"))
def test_cuda_version_is_a_version_or_value_error(text: str) -> None:
    _outcome(lambda: cuda_version(text), ValueError)


@given(st.integers(10, 99), st.integers(0, 99), st.integers(0, 999))
def test_a_cuda_tag_reads_back_as_its_version_or_is_refused(
    major: int, minor: int, fix: int
) -> None:
    """Issue 36 row 8: a tag is cu + major + ONE minor digit, so 13.99 and 13.10 have none
    (cu1399 would read back as 139.9); every tag made reads back as the version it came from."""
    version = f"{major}.{minor}.{fix}"
    if minor > 9:
        with pytest.raises(ValueError, match=rf"CUDA {re.escape(version)} has no tag"):
            cuda_tag(version)
    else:
        assert cuda_version(cuda_tag(version)) == Version(f"{major}.{minor}")
