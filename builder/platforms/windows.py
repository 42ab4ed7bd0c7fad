"""Windows: delvewheel repair, MSVC from vcvars (nvcc checks it), ccache behind pip's launcher
as cl.exe and nvcc (builder/wrapper.py rewrites the env's include paths), the launcher as the
ninja shim, and no exec."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from wheelfarm.builder.platforms.common import (
    SHIM_MODULE,
    RepairJob,
    Views,
    empty_source,
    repair_with,
)
from wheelfarm.builder.wrapper import SPEC, Spec
from wheelfarm.core.errors import BuildError
from wheelfarm.core.label import cuda_version
from wheelfarm.core.proc import Runner, call

if TYPE_CHECKING:
    from wheelfarm.matrix.expand import Build
    from wheelfarm.matrix.model import Matrix

# delvewheel's last line when a DLL is neither excluded nor on PATH (delvewheel/_dll_utils.py)
_UNFOUND = re.compile(r"^FileNotFoundError: Unable to find library: (\S+)$", re.MULTILINE)


def _launchers(bin_dir: Path, entries: tuple[str, ...]) -> None:
    """The launcher pip gives every console script (`name = module:function`), as name.exe:
    Windows runs a tool that a build calls by name only as an .exe."""
    from distlib.scripts import ScriptMaker  # noqa: PLC0415 - Windows only

    maker = ScriptMaker(None, str(bin_dir))  # type: ignore[no-untyped-call, unused-ignore]
    maker.executable = sys.executable  # type: ignore[assignment, unused-ignore]
    maker.variants = {""}
    for entry in entries:
        maker.make(entry)  # type: ignore[no-untyped-call, unused-ignore]


class Windows:
    fakes_driver = False  # nvcuda.dll loads at run time; wheels link the toolkit's import library
    rewrites_arguments = True  # builder/wrapper.py, as cl.exe and PYTORCH_NVCC
    fixed_compiler = "msvc (from vcvars; checked by nvcc)"

    def __init__(self, run: Runner = call) -> None:
        self.run = run  # what runs its tools (the compiler, the repair tool, ninja)

    def nvcc_flags(self, matrix: Matrix, build: Build) -> tuple[str, ...]:
        """compat.yaml's msvc_nvcc_flags for the build's CUDA major (/Zc:preprocessor for
        CCCL 3)."""
        return matrix.facts.compat.msvc_nvcc_flags.get(str(cuda_version(build.cuda).major), ())

    def venv_python(self, venv: Path) -> Path:
        return venv / "Scripts/python.exe"

    def nvcc(self, cuda_home: Path) -> Path:
        return cuda_home / "bin" / "nvcc.exe"

    def compile_env(self, env: dict[str, str], work: Path) -> dict[str, str]:  # noqa: ARG002
        return {"DISTUTILS_USE_SDK": "1"}  # torch's build raises without it under vcvars

    def compiler_shims(
        self,
        env: dict[str, str],
        ccache: str,
        cuda_home: Path,
        shims: Path,
        base: Path,  # noqa: ARG002 - only Linux's nvcc wrapper renames sources
        views: Views,
    ) -> dict[str, str]:
        """Pip's launcher running builder/wrapper.py as cl.exe leads PATH (torch's ninja rules
        call `cl` by name) and as PYTORCH_NVCC; each runs ccache with the real compiler and
        the env's header folders rewritten to their views, as Linux's wrappers do, so Windows
        groups share objects across Pythons (docs/adr/0016-python-groups.md). NVCC_CCBIN keeps
        nvcc's own host compiles on the real cl.exe."""
        cl = shutil.which("cl.exe", path=env.get("PATH"))
        if cl is None:
            return env  # no MSVC environment: torch's build reports it
        shims.mkdir(parents=True)
        _launchers(
            shims, ("cl = wheelfarm.builder.wrapper:cl", "nvcc = wheelfarm.builder.wrapper:nvcc")
        )
        spec = Spec(
            ccache=ccache,
            cl=cl,
            nvcc=str(self.nvcc(cuda_home)),
            rewrite=views.rewrite,
            include=tuple(map(str, views.include)),
        )
        return {
            **env,
            "PATH": os.pathsep.join([str(shims), env.get("PATH", "")]),
            "PYTORCH_NVCC": str(shims / "nvcc.exe"),
            "NVCC_CCBIN": cl,
            SPEC: spec.to_json(),
        }

    def ninja_shim(self, bin_dir: Path) -> Path:
        """The launcher pip gives every console script, as ninja.exe: Windows runs `ninja` only as
        an .exe."""
        bin_dir.mkdir()
        _launchers(bin_dir, (f"ninja = {SHIM_MODULE}:console",))
        return bin_dir

    def empty_object(self, env: dict[str, str], work: Path) -> Path:
        """Made by MSVC's real cl, which NVCC_CCBIN names past the ccache masquerade."""
        cl = env.get("NVCC_CCBIN") or shutil.which("cl.exe", path=env.get("PATH"))
        obj = work / "empty.obj"
        argv: list[str | Path] = [cl or "cl.exe", "/nologo", "/c", empty_source(work), f"/Fo{obj}"]
        self.run(argv, env=env, cwd=work)
        return obj

    def husk_link(self, env: dict[str, str]) -> dict[str, str]:
        """MSVC refuses an /EXPORT:PyInit_* that a stubbed object left undefined."""
        return {"LINK": " ".join(filter(None, [env.get("LINK"), "/FORCE:UNRESOLVED"]))}

    def pass_through(self, real: str, argv: list[str]) -> int:
        """Windows has no exec: run it and pass its status on."""
        try:
            self.run([real, *argv])
        except BuildError:
            return 1
        return 0

    def repair(self, job: RepairJob) -> Path:
        """Repair with delvewheel; it keeps the win_amd64 tag (job.plat is unused).

        Excluded: torch's and CUDA's DLLs (they load with torch) and the policy's system DLLs,
        for delvewheel's own list of what Windows has leaves out msvcp140.dll and vcomp140.dll
        (it would vendor them, or fail when they are not on PATH). One `--exclude` per pattern:
        delvewheel splits each on os.pathsep, so no separator is assumed. A DLL it can find
        nowhere fails the repair as one line naming it."""
        patterns = (*job.policy.provided, *job.policy.system)
        excludes = [arg for pattern in patterns for arg in ("--exclude", pattern)]
        add_path = ["--add-path", str(job.torch_lib)] if job.torch_lib is not None else []
        tool = [sys.executable, "-m", "delvewheel", "repair", "--no-mangle-all",
                *excludes, *add_path]  # fmt: skip
        try:
            return repair_with(tool, job, run=self.run)
        except BuildError as exc:
            log = job.log.read_text(encoding="utf-8", errors="replace") if job.log.is_file() else ""
            missing = _UNFOUND.findall(log)
            if not missing:
                raise
            msg = (
                f"{job.wheel.name} needs {missing[-1]}, which matrix/libraries.yaml neither "
                f"provides nor lists as system, and no folder on PATH holds it: put its folder "
                f"on PATH to vendor it, or list it in libraries.yaml; log: {job.log}"
            )
            raise BuildError(msg) from exc
