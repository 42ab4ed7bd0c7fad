"""Every subprocess goes through `call`: it logs the command, resolves the executable and turns
a missing tool or a failure into a domain error that names the log."""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from wheelfarm.core.errors import BuildError, ToolchainError

logger = logging.getLogger(__name__)


def which(name: str, path: str | None = None) -> str:
    """Resolve `name` on PATH or raise a ToolchainError that says how to get it."""
    found = shutil.which(name, path=path)
    if found is None:
        msg = f"{name!r} not found on PATH; install it (see docs/building.md) or put it on PATH"
        raise ToolchainError(msg)
    return found


def _last_line(log: Path) -> str:
    with log.open("rb") as fh:
        fh.seek(max(0, log.stat().st_size - 4096))
        lines = [ln.strip() for ln in fh.read().decode("utf-8", "replace").splitlines()]
    last = next((ln for ln in reversed(lines) if ln), "")
    return last if len(last) <= 120 else last[:117] + "..."  # noqa: PLR2004


def call(
    args: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    log: Path | None = None,
    capture: bool = False,
    heartbeat: float | None = None,
) -> str:
    """Run `args`, logging `+ cmd`; stream output to `log` when given, else to stderr.

    With `heartbeat` (seconds) and a log, a long command prints how long it has run and its
    latest log line that often, so an hours-long compile shows progress. Returns captured stdout
    when `capture`. Raises BuildError naming the command and the log.
    """
    argv = [str(a) for a in args]
    search_path = env.get("PATH") if env is not None else None
    argv[0] = which(argv[0], search_path) if os.sep not in argv[0] else argv[0]
    shown = shlex.join(argv)
    out: IO[str] | None = None
    logger.info("+ %s", shown)
    try:
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            out = log.open("a", encoding="utf-8")
            out.write(f"+ {shown}\n")
            out.flush()
        with subprocess.Popen(
            argv,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            text=True,
            stdout=subprocess.PIPE if capture else out,
            stderr=out,
        ) as proc:
            started = time.monotonic()
            while True:
                try:
                    stdout, _ = proc.communicate(timeout=heartbeat if log else None)
                    break
                except subprocess.TimeoutExpired:
                    assert log is not None  # noqa: S101 - timeouts only happen with a log
                    minutes, seconds = divmod(int(time.monotonic() - started), 60)
                    logger.info("    ... %dm%02ds: %s", minutes, seconds, _last_line(log))
    finally:
        if out is not None:
            out.close()
    if proc.returncode != 0:
        where = f"; log: {log}" if log is not None else ""
        msg = f"command failed with exit code {proc.returncode}: {shown}{where}"
        raise BuildError(msg)
    return stdout if capture else ""
