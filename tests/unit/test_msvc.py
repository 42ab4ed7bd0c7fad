"""`wheelfarm msvc-env` on vcvars64's `set` output (tests/unit/vcvars/): the GITHUB_ENV and
GITHUB_PATH lines scripts/install-cuda-windows.ps1 used to write itself."""

from __future__ import annotations

from pathlib import Path, PureWindowsPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wheelfarm.builder.msvc import IMPORTED, github_env, vcvars_variables
from wheelfarm.cli import main
from wheelfarm.core.errors import ToolchainError

RECORDED = Path(__file__).parent / "vcvars" / "vcvars64-14.44.txt"


MSVC = r"C:\Program Files\Microsoft Visual Studio\2022\Enterprise\VC\Tools\MSVC\14.44.35207"


def test_msvc_env_writes_what_the_script_wrote(tmp_path: Path) -> None:
    env_file, path_file = tmp_path / "github_env", tmp_path / "github_path"
    env_file.write_text("EARLIER=1\n")
    code = main(["msvc-env", "--cuda-home", r"D:\cache\cuda\13.0.2", "--vcvars-output",
                 str(RECORDED), "--github-env", str(env_file), "--github-path", str(path_file)])  # fmt: skip
    assert code == 0
    lines = env_file.read_text(encoding="utf-8").splitlines()
    assert lines[:3] == [
        "EARLIER=1",
        r"CUDA_HOME=D:\cache\cuda\13.0.2",
        r"CUDA_PATH=D:\cache\cuda\13.0.2",
    ]
    assert lines[-1] == "DISTUTILS_USE_SDK=1"
    written = dict(line.split("=", 1) for line in lines[3:-1])
    # every imported variable, named as `set` printed it (Path), no other, no CR, no BOM
    assert sorted(written, key=str.upper) == sorted(
        ["Path" if n == "PATH" else n for n in IMPORTED], key=str.upper
    )
    assert written["Path"] == rf"{MSVC}\bin\HostX64\x64;C:\Windows\system32"
    assert written["VCToolsVersion"] == "14.44.35207"
    assert not any("\r" in v or "\ufeff" in v for v in [*written, *written.values()])
    assert path_file.read_text(encoding="utf-8") == "D:\\cache\\cuda\\13.0.2\\bin\n"


def test_failed_vcvars_output_is_one_error_naming_what_is_missing() -> None:
    with pytest.raises(ToolchainError, match=r"^vcvars output lacks INCLUDE, LIB, PATH: did"):
        github_env(PureWindowsPath("C:/cuda"), "The system cannot find the path specified.\r\n")


@settings(max_examples=150, deadline=None, database=None)
@given(extra=st.text(max_size=200))
def test_no_value_can_add_a_github_env_line(extra: str) -> None:
    """Whatever else `set` printed, each written line is one imported variable (a value cannot
    smuggle a second NAME=value line into GITHUB_ENV)."""
    text = RECORDED.read_text(encoding="utf-8-sig") + extra
    try:
        found = vcvars_variables(text)
    except ToolchainError:
        return
    wanted = {n.upper() for n in IMPORTED}
    assert all(name.upper() in wanted for name in found)
    assert not any(
        c in v for v in found.values() for c in "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    )
