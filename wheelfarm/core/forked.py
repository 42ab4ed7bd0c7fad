"""Run a function in a forked child and take back its result: what the child imports and
allocates on the way is given back to the system when it exits. `wheelfarm index` loads the
matrix so: checking the YAML imports jsonschema (5 MB that the rest of the run never uses, an
eighth of its peak memory)."""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Callable
from typing import TypeVar, cast

_T = TypeVar("_T")


def forked(fn: Callable[[], _T]) -> _T:
    """`fn()`, run in a forked child and its result pickled back (it must pickle). Where the
    child gives no result (`fn` raised, or the child died), `fn` runs here instead, so its
    error is raised as it would be without the fork (an exception does not always pickle back
    whole). Runs here without forking where there is no fork, or where other threads run:
    a child forked from those can deadlock on a lock another thread held."""
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return fn()
    data = _child_result(fn)
    # our own child's bytes, read back from a pipe only it wrote: not input from outside
    return cast("_T", pickle.loads(data)) if data else fn()  # noqa: S301


def _child_result(fn: Callable[[], object]) -> bytes:
    """The pickled result of `fn()` in a forked child; b"" when it gave none."""
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
    with os.fdopen(reader, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    return data if os.waitstatus_to_exitcode(status) == 0 else b""
