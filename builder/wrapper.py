r"""The Windows compiler wrappers: cl.exe and nvcc as ccache sees them, with every argument that
names the torch env's or Python's header folders rewritten to their views in the work folder, so
a unit that never includes Python.h hashes the same for every Python of a group
(docs/adr/0016-python-groups.md). Linux does the same in POSIX sh (builder/platforms/linux.py);
Windows has no sh, so pip's launcher runs this module as `cl.exe` and as `nvcc` (PYTORCH_NVCC).

The argument shapes are torch's cpp_extension on Windows (torch/utils/cpp_extension.py,
BuildExtension.win_wrap_ninja_compile and _write_ninja_file at torch 2.14): each include folder
as one `-I<dir>` argument (distutils' gen_preprocess_options), for cl and for nvcc alike, with
torch's own folders (`...\\Lib\\site-packages\\torch\\include`, `...\\torch\\csrc\\api\\include`)
and Python's (`<prefix>\\Include`); setuptools' plain MSVC compile passes `/I<dir>` or `-I<dir>`.
Windows paths compare without case and with either slash. What cannot be checked here (no cl or
nvcc.exe on Linux): that cl's preprocessed output then names the views only, as gcc's does (the
assumption ADR 16 states, checked on a Windows runner by the group job's cache-hit log).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

SPEC = "WHEELFARM_WRAP"  # the environment variable holding a Spec as JSON
# nvcc reads these itself, and ccache hashes neither: the wrapper puts them on the command line
NVCC_FLAG_VARIABLES = ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")


@dataclass(frozen=True, kw_only=True)
class Spec:
    """What a wrapper runs: ccache, the real compilers, the folder -> view rewrites and the
    library views to add as -I (what CPATH held)."""

    ccache: str
    cl: str
    nvcc: str
    rewrite: dict[str, str]
    include: tuple[str, ...] = ()

    def to_json(self) -> str:
        return json.dumps({**dataclasses.asdict(self), "include": list(self.include)})

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Spec:
        data = json.loads(environ[SPEC])
        return cls(
            ccache=str(data["ccache"]),
            cl=str(data["cl"]),
            nvcc=str(data["nvcc"]),
            rewrite={str(k): str(v) for k, v in data["rewrite"].items()},
            include=tuple(str(i) for i in data["include"]),
        )


def _folded(path: str) -> str:
    """A Windows path as it compares: one slash kind, no case; as long as `path`, so that an
    index into it is an index into the path (a few letters lower to two characters)."""
    return "".join(c if len(low := c.lower()) != 1 else low for c in path).replace("/", "\\")


def rewrite_argument(arg: str, rewrite: Mapping[str, str]) -> str:
    r"""`arg` with its first folder of `rewrite` (anywhere in it: `-I<dir>`, `/I<dir>\\sub`)
    replaced by that folder's view; unchanged when it names none."""
    folded = _folded(arg)
    for old, new in rewrite.items():
        at = folded.find(_folded(old))
        if at >= 0:
            end = at + len(old)
            if end == len(arg) or arg[end] in '\\/"':  # the whole folder, not a prefix of one
                return arg[:at] + new + arg[end:]
    return arg


def command(tool: str, argv: Sequence[str], spec: Spec, environ: Mapping[str, str]) -> list[str]:
    """The command a wrapper runs for `tool` ('cl' or 'nvcc'): ccache, the real compiler, the
    rewritten arguments and the library views' -I; for nvcc also NVCC_PREPEND_FLAGS and
    NVCC_APPEND_FLAGS on its command line, which ccache hashes and the environment it does
    not (as the Linux wrapper does)."""
    args = [rewrite_argument(a, spec.rewrite) for a in argv]
    args += [f"-I{folder}" for folder in spec.include]
    if tool == "nvcc":
        pre, post = (environ.get(name, "").split() for name in NVCC_FLAG_VARIABLES)
        return [spec.ccache, spec.nvcc, *pre, *args, *post]
    return [spec.ccache, spec.cl, *args]


def run(tool: str) -> int:
    """Run the wrapped compiler (Windows has no exec) and pass its status on."""
    spec = Spec.from_env(os.environ)
    cmd = command(tool, sys.argv[1:], spec, os.environ)
    env = {k: v for k, v in os.environ.items() if k not in NVCC_FLAG_VARIABLES}
    return subprocess.run(cmd, env=env, check=False).returncode


def cl() -> None:
    """The `cl.exe` launcher's entry point."""
    sys.exit(run("cl"))


def nvcc() -> None:
    """The `nvcc` launcher's entry point (PYTORCH_NVCC)."""
    sys.exit(run("nvcc"))
