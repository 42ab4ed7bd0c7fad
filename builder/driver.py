"""The one place wheelfarm fakes a GPU driver.

A package such as pycuda links the driver itself (`-lcuda`) instead of loading it through the
CUDA runtime. Building it needs a `libcuda.so` to link against, and importing it needs
`libcuda.so.1`, which only a machine with NVIDIA's driver has. A full toolkit ships a link-time
stub (`lib64/stubs/libcuda.so`); a slim one (PyPI's, a redistributable subset) does not, and the
farm's build and verify machines (GitHub's hosted runners, a laptop) have no GPU. So:

- `link_env`: for the build, the toolkit's stub on LIBRARY_PATH, or where the toolkit has none
  a stub `libcuda.so` (SONAME `libcuda.so.1`) defining every `cu*` name `cuda.h` mentions.
- `import_env`: for the import check, when `libcuda.so.1` does not load here and the wheel
  needs it, a stub built with the system C compiler that defines the `cu*` symbols the wheel's
  binaries leave undefined, each returning CUDA_ERROR_NO_DEVICE: the module imports, and any
  driver call fails as on a machine without a GPU. The toolkit's stub is not used for this: its
  calls return CUDA_ERROR_STUB_LIBRARY, and what it does with the out-parameter of
  cuGetErrorString (which pycuda's error path reads) is not documented; ours fills it.

The real driver always wins: `import_env` adds nothing where `libcuda.so.1` loads. Nothing from
the wheel is executed: its binaries are read as ELF data. Linux only (the platform's
`fakes_driver`: Windows loads nvcuda.dll at run time, and a wheel links it through the toolkit's
import library).
"""

from __future__ import annotations

import ctypes
import io
import os
import re
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from wheelfarm.builder.binary import inspect_binary, is_binary
from wheelfarm.builder.platforms import current
from wheelfarm.core.proc import Runner, call

SONAME = "libcuda.so.1"
CUDA_ERROR_NO_DEVICE = 100  # cuda.h: "no CUDA-capable device is detected"
_DRIVER_SYMBOL = re.compile(r"\bcu[A-Z][A-Za-z0-9_]*\b")
_STUB_DIRS = ("lib64/stubs", "lib/stubs")


def _toolkit_stub(cuda_home: Path) -> Path | None:
    """The toolkit's own link-time stub `libcuda.so`, where it ships one."""
    return next(
        (
            cuda_home / d / "libcuda.so"
            for d in _STUB_DIRS
            if (cuda_home / d / "libcuda.so").is_file()
        ),
        None,
    )


def _header_symbols(text: str) -> list[str]:
    """Every driver API name a header mentions (functions and the `_v2` names its macros map
    them to), sorted: what a link-time stub defines.

    >>> _header_symbols("#define cuCtxCreate cuCtxCreate_v4 /* CUresult cuInit(int) */")
    ['cuCtxCreate', 'cuCtxCreate_v4', 'cuInit']
    """
    return sorted(set(_DRIVER_SYMBOL.findall(text)))


_DESCRIBED = "no CUDA-capable device is detected (wheelfarm's stub driver: no NVIDIA driver here)"
# The calls that describe an error fill a string for the caller to read (pycuda's error
# messages do); every other call only fails.
_DESCRIBES = ("cuGetErrorName", "cuGetErrorString")


def stub_source(symbols: Iterable[str]) -> str:
    """C source defining each symbol as a function that returns CUDA_ERROR_NO_DEVICE, and the
    error-describing calls as ones that describe it.

    >>> print(stub_source(["cuInit"]), end="")
    int cuInit(void) { return 100; }
    """
    lines = []
    for s in symbols:
        if s in _DESCRIBES:
            lines.append(f'int {s}(int e, const char **s) {{ *s = "{_DESCRIBED}"; return 0; }}')
        else:
            lines.append(f"int {s}(void) {{ return {CUDA_ERROR_NO_DEVICE}; }}")
    return "".join(line + "\n" for line in lines)


def _compile_stub(
    symbols: Iterable[str], dest: Path, env: Mapping[str, str], log: Path, run: Runner
) -> Path:
    """Build `dest` (a shared library with SONAME libcuda.so.1) with the system C compiler."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    source = dest.parent / "libcuda_stub.c"
    source.write_text(stub_source(symbols), encoding="utf-8")
    cc = env.get("CC", "cc").split()
    args: list[str | Path] = ["-shared", "-fPIC", f"-Wl,-soname,{SONAME}", "-o", dest, source]
    run([*cc, *args], env=env, log=log)
    return dest


def _prepend(env: Mapping[str, str], key: str, folder: Path) -> dict[str, str]:
    return {key: os.pathsep.join([str(folder), *filter(None, [env.get(key)])])}


def link_env(
    cuda_home: Path, work: Path, env: Mapping[str, str], log: Path, *, run: Runner = call
) -> dict[str, str]:
    """LIBRARY_PATH with a stub `libcuda.so` for `-lcuda`: the toolkit's own (lib64/stubs is on
    no search path that torch's cpp_extension or CMake gives the linker: sageattention's
    `libraries=["cuda"]` failed with "cannot find -lcuda" against a full toolkit), else one
    built in `work`."""
    if not current().fakes_driver:
        return {}
    if (stub := _toolkit_stub(cuda_home)) is not None:
        return _prepend(env, "LIBRARY_PATH", stub.parent)
    header = (cuda_home / "include" / "cuda.h").read_text(encoding="utf-8", errors="replace")
    _compile_stub(_header_symbols(header), work / "libcuda.so", env, log, run)
    return _prepend(env, "LIBRARY_PATH", work)


def driver_loads() -> bool:
    """Whether this machine's loader finds a `libcuda.so.1` (the real driver)."""
    try:
        ctypes.CDLL(SONAME)
    except OSError:
        return False
    return True


def _undefined_driver_symbols(data: bytes) -> set[str]:
    """The undefined dynamic `cu*` symbols of one ELF file."""
    try:
        table = ELFFile(io.BytesIO(data)).get_section_by_name(".dynsym")
        if not isinstance(table, SymbolTableSection):
            return set()
        return {
            s.name
            for s in table.iter_symbols()
            if s["st_shndx"] == "SHN_UNDEF" and _DRIVER_SYMBOL.fullmatch(s.name)
        }
    except (ELFError, ValueError, KeyError, IndexError) as exc:
        msg = f"unreadable dynamic symbol table: {exc}"
        raise ValueError(msg) from exc


def wheel_driver_symbols(wheel: Path) -> list[str]:
    """The driver symbols the wheel's binaries that need libcuda.so.1 leave undefined, sorted;
    empty when none needs it."""
    found: set[str] = set()
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if not is_binary(name):
                continue
            data = zf.read(name)
            if SONAME in inspect_binary(data).needed:
                found |= _undefined_driver_symbols(data)
    return sorted(found)


def import_env(
    wheel: Path, work: Path, env: Mapping[str, str], log: Path, *, run: Runner = call
) -> dict[str, str]:
    """LD_LIBRARY_PATH with a `libcuda.so.1` in `work` for importing `wheel` on a machine without
    the driver; nothing where the driver loads or the wheel does not need it."""
    if not current().fakes_driver or driver_loads():
        return {}
    symbols = wheel_driver_symbols(wheel)
    if not symbols:
        return {}
    _compile_stub(symbols, work / SONAME, env, log, run)
    return _prepend(env, "LD_LIBRARY_PATH", work)
