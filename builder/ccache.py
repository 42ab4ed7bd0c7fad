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
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

logger = logging.getLogger(__name__)


def _script(path: Path, ccache: str, compiler: Path) -> None:
    path.write_text(
        f'#!/bin/sh\nexec {shlex.quote(ccache)} {shlex.quote(str(compiler))} "$@"\n',
        encoding="utf-8",
    )
    path.chmod(0o755)


# cudafe++ hashes the real path of a .cu file into every symbol name it makes for the file (the
# module id), so a cold compile in another work folder gives other bytes; nvcc has no prefix map
# for it, but names the file by its path inside the work folder when told (-Xcudafe).
_NVCC = """#!/bin/sh
for arg in "$@"; do
  case $arg in
  *.cu)
    src=$(realpath -- "$arg" 2>/dev/null) || break
    case $src in {base}/*) set -- "$@" -Xcudafe "--orig_src_path_name=.${{src#{base}}}" ;; esac
    break ;;
  esac
done
exec {ccache} {nvcc} "$@"
"""


def _nvcc_script(path: Path, ccache: str, nvcc: Path, base: Path) -> None:
    text = _NVCC.format(
        base=shlex.quote(str(base.resolve())),
        ccache=shlex.quote(ccache),
        nvcc=shlex.quote(str(nvcc)),
    )
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)


def _posix(
    env: dict[str, str], ccache: str, cuda_home: Path, shims: Path, base: Path
) -> dict[str, str]:
    found = shutil.which(env.get("CXX", "c++"), path=env.get("PATH"))
    if found is None:
        return env  # no host compiler at all: the toolchain step reports it
    cxx = Path(found).resolve()
    bin_dir = shims / "bin"
    bin_dir.mkdir(parents=True)
    _script(bin_dir / cxx.name, ccache, cxx)  # its name stays gcc's: torch checks it
    wrapped = {**env, "CXX": str(bin_dir / cxx.name)}
    if not (cuda_home / "bin" / "nvcc").is_file():
        return wrapped  # no nvcc to wrap: the toolchain step reports it
    home = shims / "cuda"
    (home / "bin").mkdir(parents=True)
    for entry in cuda_home.iterdir():
        if entry.name != "bin":
            (home / entry.name).symlink_to(entry)
    for entry in (cuda_home / "bin").iterdir():
        if entry.name != "nvcc":
            (home / "bin" / entry.name).symlink_to(entry)
    _nvcc_script(home / "bin" / "nvcc", ccache, cuda_home / "bin" / "nvcc", base)
    return {**wrapped, "CUDA_HOME": str(home)}


def _windows(env: dict[str, str], ccache: str, cuda_home: Path, shims: Path) -> dict[str, str]:
    cl = shutil.which("cl.exe", path=env.get("PATH"))
    if cl is None:
        return env  # no MSVC environment: torch's build reports it
    shims.mkdir(parents=True)
    shutil.copy2(ccache, shims / "cl.exe")
    return {
        **env,
        "PATH": os.pathsep.join([str(shims), env.get("PATH", "")]),
        "PYTORCH_NVCC": subprocess.list2cmdline([ccache, str(cuda_home / "bin" / "nvcc.exe")]),
        "NVCC_CCBIN": cl,
    }


def wrap_compilers(
    env: dict[str, str],
    cuda_home: Path,
    shims: Path,
    *,
    base: Path,
    windows: bool = sys.platform == "win32",
) -> dict[str, str]:
    """`env` with ccache in front of the host compiler and nvcc (wrappers made in `shims`; on
    Linux nvcc names each .cu by its path under `base`, the work folder); unchanged, with a
    warning, when ccache is not on its PATH."""
    ccache = shutil.which("ccache", path=env.get("PATH"))
    if ccache is None:
        logger.warning("ccache is not on PATH: compiling uncached (pip install 'wheelfarm[build]')")
        return env
    shutil.rmtree(shims, ignore_errors=True)
    env = {**env, "TORCH_NO_COMPILER_WRAPPER": "1"}
    if windows:
        return _windows(env, ccache, cuda_home, shims)
    return _posix(env, ccache, cuda_home, shims, base)
