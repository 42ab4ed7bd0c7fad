"""builder/symbols.py against real ELF files the system C compiler links here (milliseconds
each): an extension importing a versioned "runtime" symbol and a torch-named one, as a CUDA
extension imports from libcudart and libc10, looked up in environments that have them or not."""

from __future__ import annotations

import io
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from wheelfarm.builder.symbols import check, check_wheel, libraries, missing, read_symbols

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler"),
]

TORCH_NAMED = "_ZN3c105probeEv"  # c10::probe(), as a variant's libc10 would define it
# fixture -> (soname, symbol version or None, C source): the runtime the extension was linked
# with, one without its symbol, one with it at another version, and two libc10s
LIBS = {
    "rt13": ("libfakert.so.13", "RT_13.0", "int rt_alloc(void){return 1;} int rt_newer(void){return 3;}"),
    "rt13-other": ("libfakert.so.13", "RT_13.0", "int rt_other(void){return 1;}"),
    "rt12": ("libfakert.so.13", "RT_12.0", "int rt_alloc(void){return 1;}"),
    "c10": ("libc10.so", None, f"int {TORCH_NAMED}(void){{return 2;}}"),
    "c10-other": ("libc10.so", None, "int other(void){return 2;}"),
}  # fmt: skip


def _cc(out: Path, source: str, *args: str) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    src = out.with_name(out.name + ".c")
    src.write_text(source + "\n", encoding="utf-8")
    subprocess.run(["cc", "-shared", "-fPIC", "-s", "-o", str(out), str(src), *args], check=True)
    src.unlink()


@pytest.fixture(scope="module")
def elfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each fixture library in a folder of its name, and ext.so linked against rt13 and c10."""
    root = tmp_path_factory.mktemp("elfs")
    for name, (soname, version, source) in LIBS.items():
        args = [f"-Wl,-soname,{soname}"]
        if version is not None:
            script = root / f"{name}.map"
            script.write_text(f"{version} {{ global: *; }};\n", encoding="utf-8")
            args.append(f"-Wl,--version-script={script}")
        _cc(root / name / soname, source, *args)
    _cc(
        root / "ext.so",
        f"int rt_alloc(void); int {TORCH_NAMED}(void);\n"
        f"int run(void){{return rt_alloc()+{TORCH_NAMED}();}}",
        f"-L{root / 'rt13'}", f"-L{root / 'c10'}", "-l:libfakert.so.13", "-lc10",
    )  # fmt: skip
    return root


@pytest.fixture(scope="module")
def binary(elfs: Path) -> Path:
    """The extension: imports rt_alloc@RT_13.0 from libfakert.so.13 and c10::probe from libc10."""
    return elfs / "ext.so"


def _site(binary: Path, folder: Path, runtime: str = "rt13", torch: str = "c10") -> Path:
    """A torch env's site-packages holding the given runtime and libc10 fixtures (built beside
    `binary`)."""
    for sub, fixture in (("nvidia/lib", runtime), ("torch/lib", torch)):
        (folder / sub).mkdir(parents=True, exist_ok=True)
        for lib in (binary.parent / fixture).iterdir():
            shutil.copy(lib, folder / sub / lib.name)
    return folder


def _problems(binary: Path, site: Path) -> list[str]:
    return check("pkg/ext.so", binary.read_bytes(), libraries(site), "torch 2.15.0+cu132")


def test_every_import_found_is_no_problem(binary: Path, tmp_path: Path) -> None:
    site = _site(binary, tmp_path)
    symbols = read_symbols(io.BytesIO(binary.read_bytes()), binary.stat().st_size)
    assert {(i.name, i.version, i.library) for i in symbols.imports} >= {
        ("rt_alloc", "RT_13.0", "libfakert.so.13")
    }
    assert set(symbols.needed) >= {"libfakert.so.13", "libc10.so"}
    assert _problems(binary, site) == []


def test_a_versioned_symbol_the_variants_runtime_lacks_is_one_line_naming_it(
    binary: Path, tmp_path: Path
) -> None:
    site = _site(binary, tmp_path, runtime="rt13-other")
    (line,) = _problems(binary, site)
    assert line.startswith("pkg/ext.so imports rt_alloc@RT_13.0, which libfakert.so.13 of")
    assert "torch 2.15.0+cu132" in line and "cuda_minor_code" in line


def test_the_same_name_under_another_version_is_missing(binary: Path, tmp_path: Path) -> None:
    site = _site(binary, tmp_path, runtime="rt12")
    assert [line.split(",")[0] for line in _problems(binary, site)] == [
        "pkg/ext.so imports rt_alloc@RT_13.0"
    ]


def test_a_torch_symbol_no_needed_library_defines_is_missing(binary: Path, tmp_path: Path) -> None:
    site = _site(binary, tmp_path, torch="c10-other")
    (line,) = _problems(binary, site)
    assert line.startswith(f"pkg/ext.so imports {TORCH_NAMED}, which ")


def test_libraries_the_environment_lacks_are_not_looked_up(binary: Path) -> None:
    """libc, the driver and the interpreter are not in a torch env: auditwheel's policy holds
    those, so an environment without libfakert checks nothing against it."""
    symbols = read_symbols(io.BytesIO(binary.read_bytes()), binary.stat().st_size)
    assert list(missing(symbols, {})) == []


def test_a_vendored_copy_in_the_wheel_is_the_wheels_own(binary: Path, tmp_path: Path) -> None:
    site = _site(binary, tmp_path / "env", runtime="rt13-other", torch="c10-other")
    wheel = tmp_path / "pkg-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.write(binary, "pkg/ext.so")
        zf.writestr("pkg/__init__.py", "")
    assert len(check_wheel(wheel, site, "env")) == 2  # rt_alloc and c10::probe
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.write(
            tmp_path / "env" / "nvidia" / "lib" / "libfakert.so.13", "pkg.libs/libfakert.so.13"
        )
        zf.write(tmp_path / "env" / "torch" / "lib" / "libc10.so", "pkg.libs/libc10.so")
    # the wheel's own copies are not looked up in the env (and are checked as binaries too)
    assert all("libfakert.so.13 of env" not in p for p in check_wheel(wheel, site, "env"))
