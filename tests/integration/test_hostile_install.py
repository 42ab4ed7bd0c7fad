"""Issue 23's install-helper and doctor rows against real loopback servers: one that sends a
byte every 10 s (install.py and `doctor --index` stop at --timeout, not when it stops), and one
that redirects packages.json to plain http on another host (install.py refuses and never asks
that host). tests/unit/test_hostile_install.py has the rows that need no socket."""

from __future__ import annotations

import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from .conftest import wheelfarm

pytestmark = pytest.mark.integration
HELPER = Path(__file__).parents[2] / "scripts" / "wheelfarm_install.py"
TIMEOUT = 3.0
SLACK = 12.0  # interpreter start-up and doctor's probe of --python, not the server's doing


@contextmanager
def _server(answer: bytes, drip: float | None = None) -> Iterator[str]:
    """A loopback HTTP server that sends `answer` to every request, then (with `drip`) one more
    body byte every `drip` seconds until the test ends. Yields its root URL."""
    stop = threading.Event()

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.recv(65536)
            self.request.sendall(answer)
            while drip is not None and not stop.wait(drip):
                self.request.sendall(b" ")

    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler) as server:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            stop.set()
            server.shutdown()


DRIPPING = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"


def _helper(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, HELPER, "demo", "--python", sys.executable, *args],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    return result, time.monotonic() - start


def test_install_py_stops_at_its_timeout_while_a_server_drips() -> None:
    with _server(DRIPPING, drip=10) as url:
        result, took = _helper("--index", url, "--timeout", str(TIMEOUT))
    assert result.returncode == 3, result.stderr
    assert took < TIMEOUT + SLACK
    assert result.stderr == (
        f"install.py: error: cannot read {url}packages.json within --timeout {TIMEOUT:g}s (the "
        "server is too slow); retry later or raise --timeout\n"
    )


def test_doctor_index_stops_at_its_timeout_while_a_server_drips() -> None:
    with _server(DRIPPING, drip=10) as url:
        start = time.monotonic()
        result = wheelfarm("doctor", "demo", "--index", url, "--timeout", str(TIMEOUT), check=False)
        took = time.monotonic() - start
    assert result.returncode == 9, result.stderr
    assert took < TIMEOUT + SLACK
    assert "stopped at the overall time limit (--timeout 3s)" in result.stderr
    assert result.stderr.count("\n") == 1


def test_install_py_refuses_a_redirect_to_plain_http_elsewhere() -> None:
    moved = b"HTTP/1.1 302 Found\r\nLocation: http://evil.example/packages.json\r\n"
    with _server(moved + b"Content-Length: 0\r\n\r\n") as url:
        result, _ = _helper("--index", url)
    assert result.returncode == 3, result.stderr
    assert result.stderr == (
        f"install.py: error: the redirect from {url}packages.json to "
        "'http://evil.example/packages.json' is not https; use https:// (plain http only to "
        "loopback)\n"
    )


def test_install_py_does_not_take_a_host_named_localhost_something_for_loopback() -> None:
    result, _ = _helper("--index", "http://localhost.evil.example/")
    assert result.returncode == 2
    assert "'http://localhost.evil.example/' is not https" in result.stderr
