"""Every subprocess goes through `call`: it echoes the command, resolves the executable and
turns a missing tool or a failure into a domain error that names the log."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from wheelfarm.errors import BuildError, ToolchainError


def which(name: str, path: str | None = None) -> str:
    """Resolve `name` on PATH or raise a ToolchainError that says how to get it."""
    found = shutil.which(name, path=path)
    if found is None:
        msg = f"{name!r} not found on PATH; install it (see docs/building.md) or put it on PATH"
        raise ToolchainError(msg)
    return found


def call(
    args: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    log: Path | None = None,
    capture: bool = False,
) -> str:
    """Run `args`, echoing `+ cmd`; stream output to `log` when given, else to stderr.

    Returns captured stdout when `capture`. Raises BuildError naming the command and the log.
    """
    argv = [str(a) for a in args]
    search_path = env.get("PATH") if env is not None else None
    argv[0] = which(argv[0], search_path) if os.sep not in argv[0] else argv[0]
    shown = shlex.join(argv)
    out: IO[str] | None = None
    print(f"+ {shown}", file=sys.stderr, flush=True)
    try:
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            out = log.open("a", encoding="utf-8")
            out.write(f"+ {shown}\n")
            out.flush()
        result = subprocess.run(
            argv,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            check=False,
            text=True,
            stdout=subprocess.PIPE if capture else out,
            stderr=out,
        )
    finally:
        if out is not None:
            out.close()
    if result.returncode != 0:
        where = f"; log: {log}" if log is not None else ""
        msg = f"command failed with exit code {result.returncode}: {shown}{where}"
        raise BuildError(msg)
    return result.stdout if capture else ""
