"""Every subprocess goes through `call`: it logs the command, resolves the executable and turns
a missing tool or a failure into a domain error that names the log.

Code that runs tools takes a `Runner` (default `call`) as a parameter, as pypa/build's
ProjectBuilder takes its subprocess runner: a test hands it a recording fake
(tests/runner.py) instead of patching this module or subprocess."""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Protocol

import psutil

from wheelfarm.core import buildlog
from wheelfarm.core.errors import BuildError, ToolchainError

logger = logging.getLogger(__name__)


class CommandFailedError(BuildError):
    """A command exited non-zero (or was killed: a negative `returncode`, the signal)."""

    def __init__(self, message: str, returncode: int) -> None:
        super().__init__(message)
        self.returncode = returncode


class Runner(Protocol):
    """What runs a command: `call`'s signature (and its errors); `call` is the real one."""

    def __call__(
        self,
        args: Sequence[str | os.PathLike[str]],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        log: Path | None = None,
        capture: bool = False,
        heartbeat: float | None = None,
        deadline: float | None = None,
    ) -> str:
        """Run `args`; return what it wrote to stdout when `capture`, else ""."""
        ...


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
    last = next((ln for ln in reversed(lines) if ln and not buildlog.is_caret(ln)), "")
    return last if len(last) <= 120 else last[:117] + "..."  # noqa: PLR2004


def _wait(heartbeat: float | None, deadline: float | None) -> float | None:
    """Seconds to wait for the process before the next heartbeat or the deadline."""
    if deadline is None:
        return heartbeat
    left = max(0.0, deadline - time.time())
    return left if heartbeat is None else min(heartbeat, left)


def _kill_tree(proc: subprocess.Popen[str]) -> None:
    """Kill a command and everything it started (pip -> ninja -> nvcc), children first."""
    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    for child in reversed(children):
        with contextlib.suppress(psutil.NoSuchProcess):  # it ended on its own meanwhile
            child.kill()
    proc.kill()


def _communicate(
    proc: subprocess.Popen[str],
    shown: str,
    *,
    log: Path | None,
    heartbeat: float | None,
    deadline: float | None,
) -> str:
    """Wait for `proc`: a heartbeat line with its latest log line every `heartbeat` seconds (with
    a log), and the whole tree killed at `deadline`. Returns what it wrote to a stdout pipe."""
    started = time.monotonic()
    while True:
        try:
            stdout, _ = proc.communicate(timeout=_wait(heartbeat if log else None, deadline))
            break
        except subprocess.TimeoutExpired:
            minutes, seconds = divmod(int(time.monotonic() - started), 60)
            if deadline is not None and time.time() >= deadline:
                _kill_tree(proc)
                proc.wait()
                where = f"; log: {log}" if log is not None else ""
                msg = f"stopped at its deadline after {minutes}m{seconds:02d}s: {shown}{where}"
                raise BuildError(msg) from None
            if log is not None:
                logger.info("    ... %dm%02ds: %s", minutes, seconds, _last_line(log))
    return stdout or ""


def call(
    args: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    log: Path | None = None,
    capture: bool = False,
    heartbeat: float | None = None,
    deadline: float | None = None,
) -> str:
    """Run `args`, logging `+ cmd`; stream output to `log` when given, else to stderr.

    With `heartbeat` (seconds) and a log, a long command prints how long it has run and its
    latest log line that often, so an hours-long compile shows progress. With `deadline` (a
    time.time() value) the command and everything it started are killed when it passes (a CI
    job must stop while it has time left to save what it did). Returns captured stdout when
    `capture`.
    Raises BuildError naming the command and the log.
    """
    argv = [str(a) for a in args]
    search_path = env.get("PATH") if env is not None else None
    argv[0] = which(argv[0], search_path) if os.sep not in argv[0] else argv[0]
    shown = shown_command(argv)
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
            stdout = _communicate(proc, shown, log=log, heartbeat=heartbeat, deadline=deadline)
    finally:
        if out is not None:
            out.close()
    if proc.returncode != 0:
        raise CommandFailedError(_failure(argv[0], shown, proc.returncode, log), proc.returncode)
    return stdout if capture else ""


def shown_command(argv: Sequence[str]) -> str:
    """The command as the log shows it: a `-c` program of several lines is counted, not echoed
    (the import check's and verify's fixed programs would fill the build log with their source)."""
    parts = [
        f"<a {len(arg.splitlines())}-line program>" if i and argv[i - 1] == "-c" and "\n" in arg
        else arg
        for i, arg in enumerate(argv)
    ]  # fmt: skip
    return shlex.join(parts)


def _failure(program: str, shown: str, code: int, log: Path | None) -> str:
    """One line for a failed command: with a log that holds a compiler error, that error (the
    cause, not the whole pip command) and the log; -v logs the lines around it."""
    if log is None:
        return f"command failed with exit code {code}: {shown}"
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    found = buildlog.cause(lines)
    if found is None:
        return f"command failed with exit code {code}: {shown}; log: {log}"
    for line in buildlog.around(lines):
        logger.debug("    | %s", line)
    return f"{Path(program).name} failed with exit code {code}: {found}; log: {log}"
