"""Tests of gcpause (filed by module: tests/README.md)."""

from __future__ import annotations

import gc

import pytest

from wheelfarm.core.gcpause import paused


def test_the_collector_is_off_inside_and_back_on_after_even_on_an_error() -> None:
    seen: list[bool] = []

    def fail() -> None:
        with paused():
            seen.append(gc.isenabled())
            raise KeyError

    assert gc.isenabled()
    with pytest.raises(KeyError):
        fail()
    assert seen == [False]
    assert gc.isenabled()


def test_a_pause_inside_a_pause_leaves_the_collector_off_until_the_outer_ends() -> None:
    with paused():
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_as_a_decorator_each_call_pauses_it() -> None:
    @paused()
    def inside() -> bool:
        return gc.isenabled()

    assert inside() is False
    assert inside() is False
    assert gc.isenabled()
