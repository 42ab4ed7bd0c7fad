"""Tests of what http does (filed by module: tests/README.md)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from tests.unit.helpers.github import Script, answer
from wheelfarm.core.errors import NetworkError
from wheelfarm.core.http import Deadline, DeadlineError, make_session, read, send


class Clock:
    """A virtual monotonic clock that `Drip` moves on."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Drip(io.RawIOBase):
    """A body that yields one byte per read and costs `seconds` of the virtual clock each."""

    def __init__(self, clock: Clock, seconds: float, size: int) -> None:
        self.clock, self.seconds, self.left = clock, seconds, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.left <= 0:
            return 0
        self.clock.now += self.seconds
        self.left -= 1
        buffer[0] = 0x20
        return 1


# --- bounded reading ---------------------------------------------------------------------------
def test_a_body_past_its_cap_is_a_network_error_naming_url_and_cap() -> None:
    response = answer(body=b"x" * 5000)
    with pytest.raises(NetworkError, match=r"GET https://h\.example/big: .* over 4,096 bytes"):
        read(response, "https://h.example/big", cap=4096)


def test_send_reads_at_most_max_bytes() -> None:
    session = Script({"https://h.example/x": answer(body=b"y" * 100_000)})
    with pytest.raises(NetworkError, match="over 1,000 bytes"):
        send(session, "GET", "https://h.example/x", max_bytes=1000)  # type: ignore[arg-type]


def test_a_dripping_server_cannot_hold_a_read_past_the_deadline() -> None:
    """One byte every 10 s, a 90 s limit: cut off at the limit, not when the body ends."""
    clock = Clock()
    deadline = Deadline.after(90, clock=clock)
    response = answer()
    response.raw = Drip(clock, 10.0, 10_000)
    with pytest.raises(DeadlineError, match=r"overall time limit \(--timeout 90s\)"):
        read(response, "https://slow.example/x", deadline=deadline)
    assert 90 <= clock.now <= 100


def test_a_request_after_the_deadline_is_not_sent() -> None:
    clock = Clock()
    deadline = Deadline.after(5, clock=clock, what="--timeout")
    clock.now = 6
    session = Script({})
    with pytest.raises(DeadlineError, match=r"GET https://h\.example/x: stopped"):
        send(session, "GET", "https://h.example/x", deadline=deadline)  # type: ignore[arg-type]
    assert session.seen == []


def test_the_per_request_timeout_shrinks_to_what_is_left() -> None:
    clock = Clock()
    deadline = Deadline.after(100, clock=clock)
    clock.now = 97.5
    assert deadline.timeout("x") == pytest.approx(2.5)
    assert Deadline.after(1000, clock=clock).timeout("x") == 60.0


def test_a_retry_after_of_an_hour_is_cut_to_two_minutes() -> None:
    retry = make_session().get_adapter("https://h.example").max_retries
    response = type("R", (), {"headers": {"Retry-After": "3600"}})()
    assert retry.get_retry_after(response) == 120.0
