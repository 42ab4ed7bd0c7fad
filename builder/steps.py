"""The build's eight steps as the user sees them: each timed, logged to its own file and
announced with a '[i/8] step' line; a failure names the step and its log."""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wheelfarm.core.errors import BuildError, ToolchainError, VerifyError, WheelfarmError

logger = logging.getLogger(__name__)

STEPS = ("toolchain", "environment", "source", "compile", "relabel", "repair", "verify", "record")


class Steps:
    """Times each step, writes its log, logs '[i/8] step' lines, names the log on failure."""

    def __init__(self, logs: Path, *, keep: bool = False) -> None:
        """`logs` is emptied (a build's logs are its last run's) unless `keep`: the compile's
        first wheel finishes in the folder its compile's logs went to."""
        if not keep:
            shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir(parents=True, exist_ok=keep)
        self.logs = logs
        self.durations: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[Path]:
        log = self.logs / f"{STEPS.index(name) + 1}-{name}.log"
        number = f"[{STEPS.index(name) + 1}/{len(STEPS)}]"
        logger.info("%s %s (log: %s)", number, name, log)
        started = time.perf_counter()
        try:
            yield log
        except WheelfarmError as exc:
            elapsed = time.perf_counter() - started
            logger.error("%s %s FAILED after %.1fs", number, name, elapsed)  # noqa: TRY400 - main reports the error once
            if isinstance(exc, (VerifyError, ToolchainError)):
                raise
            msg = f"step {name!r} failed: {exc}"
            raise BuildError(msg) from exc
        self.durations[name] = round(time.perf_counter() - started, 2)
        logger.info("%s %s done in %.1fs", number, name, self.durations[name])
