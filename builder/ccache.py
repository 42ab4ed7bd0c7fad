"""Put ccache in front of the host compiler and nvcc for every torch version and build backend.

torch wraps compilers itself only from 2.14, only on Linux and only when it finds ccache on PATH,
so older torch (the farm builds 2.4 onwards), Windows, and setup.py builds that skip ninja
(torch-scatter) would compile uncached, and a job cut off at its deadline would restart cold.
The builder therefore wraps both compilers itself, in front of what torch calls, and turns
torch's own wrapper off (TORCH_NO_COMPILER_WRAPPER) so nothing is cached twice:

- Linux: CXX becomes a two-line script running `ccache <real c++>`, and CUDA_HOME a folder of
  links to the real toolkit whose bin/nvcc runs `ccache <real nvcc>` (torch always calls
  $CUDA_HOME/bin/nvcc, with or without ninja).
- Windows: a copy of ccache.exe named cl.exe leads PATH (ccache's documented masquerade; torch's
  ninja rules call `cl` by name), PYTORCH_NVCC puts ccache before nvcc in torch's ninja file,
  and NVCC_CCBIN keeps nvcc's own host compiles on the real cl.exe.

The wrappers themselves are each platform's `compiler_shims` (builder/platforms/).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wheelfarm.builder.envs import clone
from wheelfarm.builder.platforms import BuildPlatform, current
from wheelfarm.builder.platforms.common import Views
from wheelfarm.core.proc import Runner, call
from wheelfarm.core.wheelfile import SOURCE_DATE_EPOCH

logger = logging.getLogger(__name__)

TORCH_VIEW = "torch-include"  # the view of torch's headers in the work folder
LIBRARY_VIEWS = "library-include"  # and of the nvidia-* wheels' headers, one folder each
PYTHON_VIEW = "python-include"  # and of the Python's own


@dataclass(frozen=True)
class Compile:
    """One compile in a ccache log (CCACHE_LOGFILE): its command, object file and result."""

    command: str
    object: str
    result: str  # direct_cache_hit, preprocessed_cache_hit or cache_miss

    @property
    def compiler(self) -> str:
        """The compiler's file name (`ccache COMPILER ARGS...`)."""
        words = self.command.split()
        return Path(words[1]).name if len(words) > 1 else ""


_LOG_LINE = re.compile(r"^\[[^ ]+ (\d+)\s*\] (Command line|Object file|Result): (.*)$")
RESULTS = frozenset({"direct_cache_hit", "preprocessed_cache_hit", "cache_miss"})


def settings(env: Mapping[str, str], *, cache: Path, work: Path) -> dict[str, str]:
    """The ccache variables for a build in `work`: every job of a group or a split build, each on a
    fresh machine, hashes the same and so hits the same cache entries; a user-set CCACHE_DIR
    in `env` wins over `cache`'s."""
    return {
        "CCACHE_DIR": env.get("CCACHE_DIR", str(cache / "ccache")),
        "CCACHE_BASEDIR": str(work),
        "CCACHE_NOHASHDIR": "1",
        "CCACHE_SLOPPINESS": "include_file_mtime,include_file_ctime,time_macros",
        # every job installs its toolkit afresh: hash the compilers' content, not their mtime
        "CCACHE_COMPILERCHECK": "content",
        # the nvcc wrapper puts NVCC_APPEND_FLAGS on the command line, and with it the work
        # folder's prefix map, whose value is always this build's base_dir: it changes paths in
        # debug info only, which base_dir already takes out of the hash (ADR 16)
        "CCACHE_IGNOREOPTIONS": "-Xcompiler=-ffile-prefix-map=*",
    }


def counts(env: Mapping[str, str], *, run: Runner = call) -> dict[str, int]:
    """The ccache hits and misses so far (empty without ccache on `env`'s PATH): a compile's are
    the difference of two."""
    if shutil.which("ccache", path=env.get("PATH")) is None:
        return {}
    text = run(["ccache", "--print-stats"], env=env, capture=True)
    stats = dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)
    hits = sum(int(stats.get(k, 0)) for k in ("direct_cache_hit", "preprocessed_cache_hit"))
    return {"hits": hits, "misses": int(stats.get("cache_miss", 0))}


def compile_results(logfile: Path) -> list[Compile]:
    """Every compile a ccache log records a hit or a miss for, in log order (ccache writes a
    process's lines under its pid); an unreadable log has none."""
    try:
        lines = logfile.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    seen: dict[str, dict[str, str]] = {}
    out = []
    for line in lines:
        m = _LOG_LINE.match(line)
        if m is None:
            continue
        pid, key, value = m.groups()
        if key == "Command line":
            seen[pid] = {"command": value}
        elif key == "Object file":
            seen.setdefault(pid, {"command": ""})["object"] = value
        elif value in RESULTS and "object" in seen.get(pid, {}):
            out.append(Compile(seen[pid]["command"], seen[pid]["object"], value))
            del seen[pid]
    return out


def header_view(folder: Path, view: Path) -> None:
    """`view`: the same files as `folder`, read-only. A torch env's headers sit under
    `lib/pythonX.Y/site-packages`, and the compiler writes the path it found a header at into
    its preprocessed output, which ccache hashes: through a view in the work folder
    (CCACHE_BASEDIR, so ccache sees a relative path) a unit that never includes Python.h hashes
    the same for every Python of its group (docs/adr/0016-python-groups.md).

    GCC's #pragma once takes two headers of the same content and mtime for one file (torch has
    such twins: c10/util/python_stub.h, torch/csrc/utils/python_stub.h), so each view file has
    SOURCE_DATE_EPOCH. Each view file is a clone (copy-on-write, where the file system has them)
    or a copy, made read-only, never a hard link: its owner could chmod and write it, so no
    write through the view reaches the env or the Python."""
    if view.exists():
        for root, _, _ in os.walk(view):
            Path(root).chmod(0o755)  # the folders of an earlier view, to remove it
        shutil.rmtree(view)
    view.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(folder, view, symlinks=True, copy_function=_view_file)
    for root, _, _ in os.walk(view):  # copytree copies a sealed env's read-only folder modes
        Path(root).chmod(0o755)


def _view_file(src: str, dst: str) -> None:
    if not clone(Path(src), Path(dst)):  # never a hard link: a write would reach the env
        shutil.copyfile(src, dst)
    os.utime(dst, (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH))
    Path(dst).chmod(0o444)


@dataclass(frozen=True)
class Headers:
    """Header folders whose paths name the build's Python: torch's own inside its env (its
    include paths name them), the CUDA libraries' of torch's nvidia-* wheels that a minimal
    toolkit lacks (the builder adds them), and the Python's own."""

    torch: Path | None = None
    libraries: tuple[Path, ...] = ()
    python: Path | None = None  # Python.h's folder: on every command line, which nvcc's hash keeps


def views(headers: Headers, base: Path, platform: BuildPlatform) -> Views:
    """Views in `base` of the env's header folders (header_view): torch's and Python's only
    where the platform's wrappers rewrite arguments to them."""
    rewrite = {}
    named = (headers.torch, TORCH_VIEW, "torch"), (headers.python, PYTHON_VIEW, "Python.h")
    for folder, name, member in named if platform.rewrites_arguments else ():
        # only a folder that holds what it should: never a view of a whole system folder
        if folder is not None and (folder / member).exists():
            header_view(folder, base / name)
            rewrite[str(folder)] = str(base / name)
    include = []
    for i, folder in enumerate(headers.libraries):
        view = base / LIBRARY_VIEWS / f"{i}-{folder.parent.name}"
        header_view(folder, view)
        include.append(view)
    return Views(rewrite, tuple(include))


def wrap_compilers(
    env: dict[str, str],
    cuda_home: Path,
    shims: Path,
    *,
    base: Path,
    headers: Headers = Headers(),
    platform: BuildPlatform | None = None,
) -> dict[str, str]:
    """`env` with ccache in front of the host compiler and nvcc (wrappers made in `shims`; on
    Linux nvcc names each .cu by its path under `base`, the work folder) the way `platform`
    (default: this machine's) does it, every compile reaching `headers` through views in
    `base`; without ccache on its PATH, uncached (a warning) with the library headers on
    CPATH."""
    ccache = shutil.which("ccache", path=env.get("PATH"))
    if ccache is None:
        logger.warning("ccache is not on PATH: compiling uncached (pip install 'wheelfarm[build]')")
        if not headers.libraries:
            return env
        cpath = [*map(str, headers.libraries), *filter(None, [env.get("CPATH")])]
        return {**env, "CPATH": os.pathsep.join(cpath)}
    shutil.rmtree(shims, ignore_errors=True)
    env = {**env, "TORCH_NO_COMPILER_WRAPPER": "1"}
    platform = platform or current()
    made = views(headers, base, platform)
    return platform.compiler_shims(env, ccache, cuda_home, shims, base, made)
