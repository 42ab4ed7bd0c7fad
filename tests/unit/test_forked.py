"""Tests of what forked does (filed by module: tests/README.md)."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from wheelfarm.core.errors import ConfigError
from wheelfarm.core.forked import Forked, forked


def _import_probe() -> tuple[int, str]:
    """Import a module no one imported before; where it ran and what the module says."""
    import forked_probe  # type: ignore[import-not-found]

    return os.getpid(), str(forked_probe.VALUE)


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "forked_probe.py").write_text("VALUE = 'from the child'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "forked_probe", raising=False)


@pytest.mark.usefixtures("probe")
def test_the_result_comes_back_and_the_imports_stay_in_the_child() -> None:
    """What `wheelfarm index` forks for: jsonschema, imported to check the matrix, does not
    stay in its memory."""
    if threading.active_count() > 1:
        pytest.skip("another thread runs here (pytest-xdist): forked runs in-process then")
    pid, value = forked(_import_probe)
    assert value == "from the child"
    assert pid != os.getpid()
    assert "forked_probe" not in sys.modules


@pytest.mark.usefixtures("probe")
def test_with_other_threads_it_runs_here() -> None:
    """A child forked beside other threads can deadlock on a lock one of them held."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        pid, _ = forked(_import_probe)
    finally:
        stop.set()
        other.join()
    assert pid == os.getpid()


def test_an_error_is_raised_as_without_the_fork() -> None:
    """The child's error does not pickle back whole (ConfigError's problems): `fn` runs here
    again and raises it as it is."""
    calls: list[int] = []

    def broken() -> None:
        calls.append(os.getpid())
        raise ConfigError(["matrix/torch.yaml:3: versions: 'x' is not a version"])

    with pytest.raises(
        ConfigError, match=r"invalid matrix configuration \(1 problem\):\n  - matrix/torch"
    ):
        forked(broken)
    assert calls[-1] == os.getpid()


def test_a_child_never_asked_is_ended_and_reaped(tmp_path: Path) -> None:
    """`wheelfarm index` starts the matrix's child before it knows it needs it (a locked
    site may end the run first): the child, blocked writing more than a pipe holds, is ended
    with its `Forked`, not left behind."""
    if threading.active_count() > 1:
        pytest.skip("another thread runs here (pytest-xdist): Forked runs in-process then")
    where = tmp_path / "pid"

    def big() -> bytes:
        where.write_text(str(os.getpid()))
        return b"x" * (1 << 20)

    loading = Forked(big)
    while not where.is_file() or not where.read_text():
        time.sleep(0.01)
    pid = int(where.read_text())
    del loading
    gc.collect()
    try:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped already
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # only where the test failed
