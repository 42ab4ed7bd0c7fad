"""builder/build.py's pure parts: where a group job finds each of its Pythons."""

from __future__ import annotations

from pathlib import Path

import pytest

from wheelfarm.builder.build import find_python
from wheelfarm.core.errors import ToolchainError


def _python(cache: Path, folder: str, exe: str = "x64/python.exe") -> Path:
    path = cache / "Python" / folder / exe
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    return path


def test_a_windows_group_finds_each_python_in_the_runners_tool_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """setup-python installs every Python of the group's list into RUNNER_TOOL_CACHE; the build
    takes the newest patch of each minor, a release candidate where that is all there is."""
    _python(tmp_path, "3.10.11")
    newest = _python(tmp_path, "3.10.20")
    rc = _python(tmp_path, "3.15.0-rc.1")
    _python(tmp_path, "3.100.1")  # not 3.10
    (tmp_path / "Python" / "3.10.99").mkdir()  # no interpreter in it
    environ = {"RUNNER_TOOL_CACHE": str(tmp_path)}
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))  # no python3.X on PATH, as on Windows
    assert find_python("3.10", None, environ) == str(newest)
    assert find_python("3.15", None, environ) == str(rc)
    with pytest.raises(ToolchainError, match=r"no Python 3\.9 found .*the runner's tool cache"):
        find_python("3.9", None, environ)
    assert find_python("3.9", "C:/py/python.exe", environ) == "C:/py/python.exe"
