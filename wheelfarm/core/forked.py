"""Run a function in a forked child and take back its result: what the child imports and
allocates on the way is given back to the system when it exits, and the parent goes on with
its own work meanwhile. `wheelfarm index` loads the matrix so: checking the YAML imports
jsonschema (5 MB that the rest of the run never uses, an eighth of its peak memory), and the
parent imports the site's writer while the child reads the YAML."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar, cast

_T = TypeVar("_T")


class Forked(Generic[_T]):
    """`fn()`, started in a forked child now; `result` waits for it and takes it back pickled
    (it must pickle). Where the child gives no result (`fn` raised, or the child died), `fn`
    runs here instead, so its error is raised as it would be without the fork (an exception
    does not always pickle back whole). Runs here, in `result`, without forking where there
    is no fork or where other threads run: a child forked from those can deadlock on a lock
    another thread held. A child whose result is never asked for is killed and reaped with
    its parent's `Forked` (a run that ends early, e.g. on a locked site)."""

    def __init__(self, fn: Callable[[], _T]) -> None:
        self._fn = fn
        self._child: tuple[int, int] | None = None  # (pid, the pipe's read end)
        if hasattr(os, "fork") and threading.active_count() == 1:
            self._child = _start(fn)
            self._ended = weakref.finalize(self, _end, *self._child)

    def result(self) -> _T:
        data = b""
        if self._child is not None:
            data = _take(*self._child)
            self._ended.detach()
            self._child = None
        # our own child's bytes, read from a pipe only it wrote: not input from outside
        return cast("_T", pickle.loads(data)) if data else self._fn()  # noqa: S301


def forked(fn: Callable[[], _T]) -> _T:
    """`fn()` run in a forked child (see `Forked`), waited for."""
    return Forked(fn).result()


def _start(fn: Callable[[], object]) -> tuple[int, int]:
    """A forked child running `fn`, writing its pickled result to a pipe: (pid, read end)."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller
        code = 1
        try:
            os.close(reader)
            with os.fdopen(writer, "wb") as out:
                pickle.dump(fn(), out, protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        finally:
            os._exit(code)  # no atexit, no finalizers, no flushing the parent's buffers
    os.close(writer)
    return pid, reader


def _take(pid: int, reader: int) -> bytes:
    """The child's pickled result, read to its end; b"" when it gave none."""
    with os.fdopen(reader, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    return data if os.waitstatus_to_exitcode(status) == 0 else b""


def _end(pid: int, reader: int) -> None:
    """A child no one asked: killed (its result is not wanted, nor the rest of its work),
    its pipe closed, then reaped."""
    os.kill(pid, signal.SIGKILL)
    os.close(reader)
    os.waitpid(pid, 0)
