"""Hostile input that needs real processes (issue 11): git URLs that try to run a command, and
the install helper run as users run it, on a --python that is not Python and an index that does
not answer or answers garbage (one line on stderr and its exit code). No build is needed, so
these run in seconds."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from tests.roots import REPO
from wheelfarm.builder.source import fetch
from wheelfarm.core.errors import BuildError
from wheelfarm.matrix.model import PackageVersion, Source

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("url", ["ext::sh -c touch% {marker}", "--upload-pack=touch {marker}"])
def test_a_git_url_never_runs_a_command(url: str, tmp_path: Path) -> None:
    """The loader refuses these URLs; fetch is safe even for a hand-made Source."""
    marker = tmp_path / "pwned"
    source = Source(git=url.format(marker=marker), commit="0" * 40)
    with pytest.raises(BuildError):
        fetch(
            "pkg",
            PackageVersion(version=Version("1.0"), source=source),
            tmp_path / "work",
            root=REPO,
            cache=tmp_path / "cache",
            sdist_index="unused",
            log=tmp_path / "log",
        )
    assert not marker.exists()


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
