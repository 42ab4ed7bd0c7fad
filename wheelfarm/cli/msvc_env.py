"""`wheelfarm msvc-env`: a Windows runner's toolkit and MSVC environment, for later steps."""

from __future__ import annotations

import argparse
from pathlib import Path, PureWindowsPath

from wheelfarm.cli import common
from wheelfarm.core.errors import UsageError


def configure(sub: common.Subparsers[argparse.ArgumentParser]) -> None:
    p = common.add_command(
        sub,
        "msvc-env",
        execute,
        "Write CUDA_HOME, vcvars' variables and DISTUTILS_USE_SDK to GITHUB_ENV and the "
        "toolkit's bin to GITHUB_PATH (Windows).",
    )
    p.add_argument("--cuda-home", required=True, help="what `wheelfarm install-cuda` printed")
    p.add_argument(
        "--vcvars-output", type=Path, required=True, help="`vcvars64.bat ... && set`, saved"
    )
    p.add_argument("--github-env", type=Path, required=True, help="the GITHUB_ENV file")
    p.add_argument("--github-path", type=Path, required=True, help="the GITHUB_PATH file")


def execute(args: argparse.Namespace) -> int:
    from wheelfarm.builder.msvc import github_env

    try:  # PowerShell 5.1's Out-File -Encoding utf8 starts the file with a BOM
        text = args.vcvars_output.read_text(encoding="utf-8-sig", errors="replace")
    except OSError as exc:
        msg = f"--vcvars-output {args.vcvars_output}: {exc.strerror or exc}"
        raise UsageError(msg) from exc
    env, path = github_env(PureWindowsPath(args.cuda_home), text)
    _append("--github-env", args.github_env, env)
    _append("--github-path", args.github_path, path)
    return 0


def _append(flag: str, target: Path, lines: list[str]) -> None:
    from wheelfarm.builder.msvc import append_lines

    try:
        append_lines(target, lines)
    except OSError as exc:
        msg = f"{flag} {target}: {exc.strerror or exc}"
        raise UsageError(msg) from exc
