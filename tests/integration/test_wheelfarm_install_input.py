"""Tests of what wheelfarm_install_input does (filed by module: tests/README.md)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import DRIPPING, SLACK, TIMEOUT, _server
from tests.roots import REPO

pytestmark = pytest.mark.integration


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, REPO.install_helper, "demo", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture
def index(tmp_path: Path) -> str:
    """A readable, empty index as a file:// URL."""
    (tmp_path / "packages.json").write_text(json.dumps({"wheels": []}))
    return tmp_path.as_uri()


def _one_line(result: subprocess.CompletedProcess[str], code: int, *parts: str) -> None:
    assert result.returncode == code, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("install.py: error: ")
    for part in parts:
        assert part in result.stderr


def test_a_missing_python(index: str) -> None:
    result = _run("--index", index, "--python", "/nonexistent/python")
    _one_line(result, 2, "--python '/nonexistent/python' does not run as Python", "No such file")


def test_a_program_that_is_not_python(index: str) -> None:
    true = shutil.which("true")
    if true is None:
        pytest.skip("no `true` program here")
    result = _run("--index", index, "--python", true)
    _one_line(result, 2, f"--python {true!r} did not answer like Python with torch")


def test_a_file_that_is_not_executable(index: str, tmp_path: Path) -> None:
    text = tmp_path / "python"
    text.write_text("not a program\n")
    result = _run("--index", index, "--python", text)
    _one_line(result, 2, "does not run as Python", "Permission denied")


def test_an_index_that_does_not_answer() -> None:
    with socket.socket() as probe:  # a port nothing listens on: bound, never listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        result = _run("--index", f"http://127.0.0.1:{port}/", "--python", sys.executable)
    _one_line(result, 3, f"cannot read http://127.0.0.1:{port}/packages.json", "check --index")


def test_a_garbled_index(tmp_path: Path) -> None:
    (tmp_path / "packages.json").write_text("<html>a 404 page</html>")
    result = _run("--index", tmp_path.as_uri(), "--python", sys.executable)
    _one_line(result, 3, "packages.json is not a wheelfarm packages.json (JSONDecodeError")


HELPER = Path(__file__).parents[2] / "scripts" / "wheelfarm_install.py"


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
