"""A Windows runner's build environment for later workflow steps: what vcvars64 sets (the
output of `vcvars64.bat -vcvars_ver=X && set`, recorded by scripts/install-cuda-windows.ps1) and
the toolkit's home, as the lines GitHub Actions reads from GITHUB_ENV and GITHUB_PATH.

Moved out of the PowerShell script so that tests run it on recorded vcvars output. Windows
variable names are case-insensitive (`set` prints `Path`), so names are matched without case and
written as vcvars printed them; a value is one line of `set`'s output, so no value can carry a
second GITHUB_ENV line."""

from __future__ import annotations

from pathlib import Path, PureWindowsPath

from wheelfarm.core.errors import ToolchainError

# What MSVC's environment consists of for cl.exe, link.exe and nvcc's host pass.
IMPORTED = ("PATH", "INCLUDE", "LIB", "LIBPATH", "VCINSTALLDIR", "VCToolsInstallDir",
            "VCToolsVersion", "WindowsSdkDir", "WindowsSDKVersion", "UCRTVersion",
            "UniversalCRTSdkDir")  # fmt: skip
_WANTED = {name.upper() for name in IMPORTED}


def vcvars_variables(output: str) -> dict[str, str]:
    r"""The IMPORTED variables in `set`'s output (NAME=value a line; other lines ignored).

    >>> vcvars_variables("Path=C:\\VS;C:\\Windows\nOS=Windows_NT\nINCLUDE=I\nLIB=L\n")
    {'Path': 'C:\\VS;C:\\Windows', 'INCLUDE': 'I', 'LIB': 'L'}
    """
    found: dict[str, str] = {}
    for line in output.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.upper() in _WANTED:
            found[name] = value
    missing = _WANTED - {name.upper() for name in found}
    if {"PATH", "INCLUDE", "LIB"} & missing:
        msg = (
            f"vcvars output lacks {', '.join(sorted(missing & {'PATH', 'INCLUDE', 'LIB'}))}: "
            f"did vcvars64 -vcvars_ver fail? (is that MSVC toolset installed on this runner?)"
        )
        raise ToolchainError(msg)
    return found


def github_env(cuda_home: PureWindowsPath, vcvars_output: str) -> tuple[list[str], list[str]]:
    """(GITHUB_ENV lines, GITHUB_PATH lines) for a Windows build: CUDA_HOME and CUDA_PATH,
    vcvars' variables, DISTUTILS_USE_SDK=1 (torch's build refuses vcvars without it), and the
    toolkit's bin on PATH."""
    env = [f"CUDA_HOME={cuda_home}", f"CUDA_PATH={cuda_home}"]
    env += [f"{name}={value}" for name, value in vcvars_variables(vcvars_output).items()]
    env.append("DISTUTILS_USE_SDK=1")
    return env, [str(cuda_home / "bin")]


def append_lines(path: Path, lines: list[str]) -> None:
    """Append to a GITHUB_ENV/GITHUB_PATH file, UTF-8 without a byte-order mark."""
    with path.open("a", encoding="utf-8", newline="\n") as f:
        f.writelines(f"{line}\n" for line in lines)
