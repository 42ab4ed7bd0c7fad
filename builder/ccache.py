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
import shutil
from pathlib import Path

from wheelfarm.builder.platforms import BuildPlatform, current

logger = logging.getLogger(__name__)


def wrap_compilers(
    env: dict[str, str],
    cuda_home: Path,
    shims: Path,
    *,
    base: Path,
    platform: BuildPlatform | None = None,
) -> dict[str, str]:
    """`env` with ccache in front of the host compiler and nvcc (wrappers made in `shims`; on
    Linux nvcc names each .cu by its path under `base`, the work folder) the way `platform`
    (default: this machine's) does it; unchanged, with a warning, when ccache is not on its
    PATH."""
    ccache = shutil.which("ccache", path=env.get("PATH"))
    if ccache is None:
        logger.warning("ccache is not on PATH: compiling uncached (pip install 'wheelfarm[build]')")
        return env
    shutil.rmtree(shims, ignore_errors=True)
    env = {**env, "TORCH_NO_COMPILER_WRAPPER": "1"}
    return (platform or current()).compiler_shims(env, ccache, cuda_home, shims, base)
