"""A recording `Runner` (wheelfarm.core.proc) for unit tests: code that runs tools takes one as
a parameter, so a test hands it this instead of patching subprocess or a module's `call`."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

Answer = Callable[[list[str]], str]


@dataclass
class Recorder:
    """Records each command (its words as strings) and the keywords it ran with; answers with
    `answer(argv)` (default ""), which may raise what a failing command would."""

    answer: Answer = lambda argv: ""
    commands: list[list[str]] = field(default_factory=list)
    options: list[dict[str, object]] = field(default_factory=list)

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
        argv = [str(a) for a in args]
        self.commands.append(argv)
        kept = {"env": env, "cwd": cwd, "log": log, "capture": capture}
        self.options.append({**kept, "heartbeat": heartbeat, "deadline": deadline})
        return self.answer(argv)
