"""Hypothesis strategies and settings, and the deadline that turns a hang into a failure."""

from __future__ import annotations

import signal
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

numbers = st.integers(1, 15).flatmap(lambda m: st.integers(0, 9).map(lambda n: (m, n)))


ASCII = st.characters(min_codepoint=0x20, max_codepoint=0x7E)


SHAPED = st.sampled_from(["cu130", "2.14", "3.12", "linux_x86_64", "sm_90", "sm_100f", "sm_90a"])


VALUE = st.one_of(
    SHAPED, st.text(ASCII, max_size=20), st.text(max_size=8), st.integers(), st.none()
)


T = TypeVar("T")


CALL_SECONDS = 5.0  # one parser call; the slowest real one (a full matrix load) takes ~50 ms


FEW = settings(
    max_examples=60,
    deadline=None,  # SIGALRM bounds each call; hypothesis' deadline would only flag slowness
    database=None,  # write nothing into the checkout
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


SOME = settings(FEW, max_examples=150)


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    st.sampled_from(["1.0", "1.0.0", ">=2.6", "=>2.6", "cu130", "9.0", "12.0+PTX", "sm35", ""]),
)


VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _maybe(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a valid value, now and then anything: the deep checks run, and so do the guards.
    (st.one_of drops repeated branches, so the odds are set by sampling a flag.)"""
    return st.sampled_from([True] * 24 + [False]).flatmap(lambda ok: valid if ok else VALUES)


@contextmanager
def deadline(seconds: float = 5.0) -> Iterator[None]:
    """Turn a hang in the body into a test failure (SIGALRM; a no-op where there is none)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        msg = f"still running after {seconds}s"
        raise TimeoutError(msg)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _outcome(call: Callable[[], T], *errors: type[Exception]) -> T | Exception:
    """call() under the deadline: its result, or the exception when it is one of `errors`
    (any other exception, or a hang, fails the test)."""
    with deadline(CALL_SECONDS):
        try:
            return call()
        except errors as exc:
            return exc


def _mutated(original: bytes) -> st.SearchStrategy[bytes]:
    """`original` with a few bytes replaced, inserted or deleted."""
    edit = st.tuples(st.integers(0, len(original)), st.integers(0, 3), st.binary(max_size=4))

    def apply(edits: list[tuple[int, int, bytes]]) -> bytes:
        data = bytearray(original)
        for at, cut, new in edits:
            data[at : at + cut] = new
        return bytes(data)

    return st.lists(edit, min_size=1, max_size=4).map(apply)


MEMBER_NAMES = st.one_of(
    st.sampled_from(["pkg/setup.py", "pkg", "pkg/", "./pkg/a", "../x", "/abs", "pkg/../../x",
                     "C:\\x", "..\\x", "pkg\\..\\..\\x", "", ".", "pkg/a/b/c"]),
    st.text(st.characters(blacklist_categories=["Cs"]), max_size=12),
)  # fmt: skip


TAR_TYPES = st.sampled_from(
    [tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.FIFOTYPE]
)


MEMBERS = st.lists(st.tuples(MEMBER_NAMES, TAR_TYPES, st.binary(max_size=64)), max_size=6)
