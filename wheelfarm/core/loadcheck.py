"""Loading every extension module a wheel's RECORD holds, each in a child process of its own.

An import of a package's top level proves nothing about its binaries: a namespace package, or an
`__init__` that loads its extension lazily, imports with the `.so` cut to 4 KB. So verify and
doctor load each `.so`/`.pyd` by its path, after torch (which loads the libraries a torch
extension needs), and a child that crashes (bus error, segfault) is a failed check, not a dead
checker. The member paths are arguments to a fixed program, never its code."""

from __future__ import annotations

import csv
import io
import signal
import zipfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from wheelfarm.core import buildlog
from wheelfarm.core.wheelfile import dist_info

EXTENSIONS = (".so", ".pyd")
# argv: "torch" or "", the folder the wheel's members are in ("": the interpreter's platlib),
# the member. Its package is imported first where it can be (as a user's import does); the
# extension module is then loaded through its spec (its PyInit runs; a module already loaded by
# its package is the same one), and a shared object that is no module (no PyInit) with ctypes.
LOAD_PROGRAM = """\
import ctypes, importlib.util, os, sys, sysconfig
first, base, member = sys.argv[1:4]
if first:
    importlib.import_module(first)
path = os.path.join(base or sysconfig.get_paths()["platlib"], *member.split("/"))
parts = member.split("/")
name = ".".join([*parts[:-1], parts[-1].split(".")[0]])
if len(parts) > 1 and all(p.isidentifier() for p in parts[:-1]):
    try:  # its package first, as a user's import does (delvewheel's DLL folders on Windows)
        importlib.import_module(".".join(parts[:-1]))
    except Exception:
        pass  # a package that needs a GPU at import: its binary is still loaded on its own
spec = importlib.util.spec_from_file_location(name, path)
if spec is None:
    ctypes.CDLL(path)
else:
    try:
        importlib.util.module_from_spec(spec)
    except ImportError as exc:
        if "export function" not in str(exc):
            raise
        ctypes.CDLL(path)
"""


def extension_members(names: Sequence[str]) -> list[str]:
    """The `.so`/`.pyd` files among a wheel's member paths that install into site-packages
    (not under `.data/`), each a safe relative path."""
    found = []
    for name in names:
        path = PurePosixPath(name)
        if (
            name.endswith(EXTENSIONS)
            and not path.is_absolute()
            and ".." not in path.parts
            and "\\" not in name
            and not path.parts[0].endswith(".data")
        ):
            found.append(name)
    return sorted(set(found))


def record_members(wheel: Path) -> list[str]:
    """The paths the wheel's RECORD lists (none when it has no readable RECORD: the static
    checks report that)."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            info = dist_info(zf.namelist())
            text = zf.read(f"{info}/RECORD").decode("utf-8", "replace")
        return [row[0] for row in csv.reader(io.StringIO(text)) if row]
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, csv.Error):
        return []


def died(returncode: int, output: Sequence[str]) -> str:
    """What a child died of: its exception (traceback's last line), or the signal that killed it."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "an unknown signal"
        return f"crashed: killed by {name} (signal {-returncode})"
    return buildlog.exception(output) or f"exited with code {returncode}, no traceback"
