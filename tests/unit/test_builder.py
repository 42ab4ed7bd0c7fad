from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version

from tests.roots import REPO
from tests.runner import Recorder
from wheelfarm.builder import toolchain
from wheelfarm.builder.binary import FATBIN_MAGIC, parse_fatbin
from wheelfarm.builder.build import compile_env, max_jobs
from wheelfarm.builder.policy import library_policy
from wheelfarm.builder.provenance import set_by_build
from wheelfarm.builder.relabel import relabel
from wheelfarm.builder.target import resolve
from wheelfarm.builder.verify import Expectation, verify_static
from wheelfarm.core.errors import BuildError, PlanError, ToolchainError, VerifyError
from wheelfarm.core.proc import CommandFailedError
from wheelfarm.core.wheelfile import metadata, record_problems, write_wheel
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import ArchList
from wheelfarm.matrix.toolkits import gcc_max


def fatbin(entries: list[tuple[int, int]]) -> bytes:
    """A fatbin container in NVIDIA's layout: (kind, sm) entries with tiny payloads."""
    body = b""
    for kind, sm in entries:
        payload = b"\0" * 16
        header = struct.pack("<HHIQ", kind, 0x101, 64, len(payload)) + b"\0" * 12
        header += struct.pack("<I", sm) + b"\0" * (64 - 32)
        body += header + payload
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body)) + body


def test_parse_fatbin_reads_sass_and_ptx_across_containers() -> None:
    blob = fatbin([(2, 80), (2, 90), (1, 90)]) + b"\0" * 8 + fatbin([(2, 120)])
    cubins, ptx = parse_fatbin(blob)
    assert cubins == {"sm_80", "sm_90", "sm_120"}
    assert ptx == {"sm_90"}


@pytest.mark.parametrize(
    ("text", "version"),
    [
        (
            "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n",
            "13.0.88",
        ),
        ("Cuda compilation tools, release 12.6, V12.6.85", "12.6.85"),
    ],
)
def test_nvcc_version(text: str, version: str) -> None:
    assert str(toolchain.nvcc_version(text)) == version


def test_nvcc_version_garbage_is_a_clear_error() -> None:
    with pytest.raises(ToolchainError, match="cannot read the CUDA version"):
        toolchain.nvcc_version("command not found")


@pytest.mark.parametrize(
    ("cuda", "gcc", "ok"),
    [
        ("12.6.3", "g++ (GCC) 13.3.1 20240611", True),
        ("12.6.3", "g++ (GCC) 14.2.1 20250110", False),
        ("13.0.88", "c++ (Debian 12.2.0-14+deb12u1) 12.2.0", True),
    ],
)
def test_host_compiler_check(
    monkeypatch: pytest.MonkeyPatch, cuda: str, gcc: str, ok: bool
) -> None:
    run = Recorder(lambda argv: gcc + "\n")
    limit = gcc_max(REPO, Version(cuda))  # compat.yaml: 13 for CUDA 12.6
    if ok:
        assert toolchain.check_compiler(Version(cuda), {}, limit, run=run) == gcc
    else:
        with pytest.raises(ToolchainError, match=r"12.6 accepts gcc <= 13 \(compat.yaml\); set"):
            toolchain.check_compiler(Version(cuda), {}, limit, run=run)
    assert run.commands[0] == ["c++", "--version"]


def _wheel(tmp: Path, version: str = "1.0", headers: str = "") -> Path:
    info = f"demo_pkg-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: demo-pkg\nVersion: {version}\n{headers}"
    files = {
        "demo_pkg/__init__.py": b"",
        f"{info}/METADATA": meta.encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nTag: cp312-cp312-linux_x86_64\n",
    }
    path = tmp / f"demo_pkg-{version}-cp312-cp312-linux_x86_64.whl"
    write_wheel(path, files, info)
    return path


def test_relabel_rewrites_name_metadata_dist_info_and_record(tmp_path: Path) -> None:
    out = relabel(_wheel(tmp_path), "cu130torch2.14", tmp_path / "out")
    assert out.name == "demo_pkg-1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl"
    assert metadata(out)["version"] == "1.0+cu130torch2.14"
    names = zipfile.ZipFile(out).namelist()
    assert "demo_pkg-1.0+cu130torch2.14.dist-info/RECORD" in names
    report = verify_static(
        out,
        Expectation(
            name="demo-pkg",
            version="1.0",
            label="cu130torch2.14",
            python_tag="cp312",
            platform="linux_x86_64",
            archs=ArchList.parse("9.0"),
            policy=library_policy(REPO, "linux"),
        ),
    )
    # only the missing device code is wrong: name, METADATA and RECORD agree
    assert report.problems == ["no shared object carries CUDA device code (no fatbin)"]


@pytest.mark.parametrize(
    ("label", "headers", "requires"),
    [
        ("cu130torch2.14", "", ["torch>=2.14,<2.15"]),
        ("cu130torch2.9", "Requires-Dist: torch\nRequires-Dist: einops\n",
         ["torch>=2.9,<2.10", "einops"]),
        ("cu130torch2.10.stable", "Requires-Dist: torch>=2.0\n\nA body.\n", ["torch>=2.10"]),
        ("cu130", "Requires-Dist: numpy\n", ["numpy"]),
        ("cu130torch2.14", 'Requires-Dist: torch; extra == "test"\n',
         ['torch; extra == "test"', "torch>=2.14,<2.15"]),
    ],
)  # fmt: skip
def test_relabel_pins_the_torch_minor_it_was_built_for(
    tmp_path: Path, label: str, headers: str, requires: list[str]
) -> None:
    """One torch requirement, the label's range, in place of a bare one; RECORD stays true."""
    out = relabel(_wheel(tmp_path, headers=headers), label, tmp_path / "out")
    assert metadata(out).get("requires_dist", []) == requires
    assert record_problems(out) == []


def test_relabel_adds_the_torch_range_to_a_wheel_labelled_at_build(tmp_path: Path) -> None:
    """causal-conv1d sets its label itself: the wheel keeps its name and gains the range."""
    labelled = _wheel(tmp_path, "1.0+cu130torch2.14", "Requires-Dist: torch\n")
    out = relabel(labelled, "cu130torch2.14", tmp_path / "out")
    assert out.name == labelled.name and out != labelled
    assert metadata(out)["requires_dist"] == ["torch>=2.14,<2.15"]
    assert relabel(out, "cu130torch2.14", tmp_path / "again") == out  # nothing left to change


def test_relabel_requires_the_farm_wheels_the_package_imports(tmp_path: Path) -> None:
    """torch-sparse imports torch_scatter undeclared: its wheel requires the farm's; a stale
    unconditional requirement of the same name is replaced, a conditional one kept."""
    headers = (
        "Requires-Dist: scipy\nRequires-Dist: Torch_Scatter>=2.0\n"
        'Requires-Dist: torch-scatter; extra == "test"\n'
    )
    out = relabel(
        _wheel(tmp_path, headers=headers), "cu130torch2.14", tmp_path / "out",
        ("torch-scatter==2.1.2",),
    )  # fmt: skip
    assert metadata(out)["requires_dist"] == [
        "scipy",
        'torch-scatter; extra == "test"',
        "torch>=2.14,<2.15",
        "torch-scatter==2.1.2",
    ]
    assert record_problems(out) == []
    again = relabel(out, "cu130torch2.14", tmp_path / "again", ("torch-scatter==2.1.2",))
    assert again == out  # nothing left to change


def test_relabel_refuses_a_different_existing_label(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="already has local version 'cu126'"):
        relabel(_wheel(tmp_path, "1.0+cu126"), "cu130torch2.14", tmp_path / "out")


def test_compile_env_sets_arch_lists_label_and_jobs(tmp_path: Path) -> None:
    matrix = load_matrix(REPO)
    target = resolve(
        matrix, expand(matrix), "flash-attn-2.8.3.post2-cu130torch2.14-cp312-linux_x86_64"
    )
    tc = toolchain.Toolchain(tmp_path, tmp_path / "bin" / "nvcc", Version("13.0.88"), "gcc")
    env = compile_env(target, tc, tmp_path / "venv" / "bin", None, tmp_path, tmp_path / "cache")
    assert env["TORCH_CUDA_ARCH_LIST"] == "8.0;9.0;10.0;12.0"
    assert env["FLASH_ATTN_CUDA_ARCHS"] == "80;90;100;120"
    assert env["FLASH_ATTN_LOCAL_VERSION"] == "cu130torch2.14"
    assert env["FLASH_ATTENTION_FORCE_BUILD"] == "TRUE"
    assert int(env["MAX_JOBS"]) == max_jobs(3.0)


def test_compile_env_maps_the_work_folder_and_the_record_lists_all_it_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CPPFLAGS", "-DX")
    monkeypatch.setenv("FLASH_ATTENTION_FORCE_BUILD", "TRUE")  # the package's own, already set
    matrix = load_matrix(REPO)
    target = resolve(
        matrix, expand(matrix), "flash-attn-2.8.3.post2-cu130torch2.14-cp312-linux_x86_64"
    )
    tc = toolchain.Toolchain(tmp_path, tmp_path / "bin" / "nvcc", Version("13.0.88"), "gcc")
    work = tmp_path / "work"
    env = compile_env(target, tc, work / "venv" / "bin", None, work, tmp_path / "cache")
    assert env["CPPFLAGS"] == f"-DX -ffile-prefix-map={work}=."  # the user's flags stay first
    assert env["NVCC_APPEND_FLAGS"] == f"-Xcompiler=-ffile-prefix-map={work}=."
    assert env["LDFLAGS"] == "-Wl,-x"
    recorded = set_by_build(env, target, work)
    assert recorded["CPPFLAGS"] == "-DX -ffile-prefix-map=<work>=."
    assert recorded["CCACHE_BASEDIR"] == "<work>"
    assert recorded["FLASH_ATTENTION_FORCE_BUILD"] == "TRUE"
    assert recorded["FLASH_ATTN_LOCAL_VERSION"] == "cu130torch2.14"
    assert "HOME" not in recorded and list(recorded) == sorted(recorded)
    assert str(work) not in json.dumps(recorded)  # the same in every work folder


def test_resolve_unknown_build_id_suggests(tmp_path: Path) -> None:
    matrix = load_matrix(REPO)
    with pytest.raises(
        PlanError, match=r"did you mean 'causal-conv1d-1\.7\.0-cu130torch2\.14-cp312-linux_x86_64'"
    ):
        resolve(matrix, expand(matrix), "causal-conv1d-1.7.0-cu130torch2.14-cp312-linux_x86")


def test_pe_imports_are_read_from_a_real_windows_binary() -> None:
    """distlib's Windows launchers (the ones pip writes console scripts with): real PE32+ and
    PE32 files."""
    import distlib

    from wheelfarm.builder.binary import inspect_binary

    folder = Path(distlib.__file__).parent
    for exe in ("t64.exe", "t32.exe"):
        info = inspect_binary((folder / exe).read_bytes())
        assert "KERNEL32.dll" in info.needed
        assert not info.has_device_code
        policy = library_policy(REPO, "windows")
        assert all(policy.is_system(dll) for dll in info.needed)  # case-insensitive on Windows
    assert library_policy(REPO, "windows").is_provided("C10.DLL")
    assert not library_policy(REPO, "linux").is_provided("LIBC10.SO")


@pytest.mark.parametrize(
    ("torch_free", "index"),
    [(False, "pip"), (False, "https://download.pytorch.org/whl/cu130"), (True, "pip")],
)
def test_check_import_installs_import_requires_and_imports_torch_only_when_present(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, torch_free: bool, index: str
) -> None:
    """import_requires resolve with torch held at the env's own build, from its torch index
    too: nunchaku's torchvision must be the one built for that torch, not PyPI's newest (which
    would replace torch in the venv)."""
    from wheelfarm.builder import envs, importcheck

    run = _venv_runner(tmp_path)
    torch_env = None if torch_free else envs.TorchEnv(tmp_path / "torch", "2.14.1", "cu130", index)
    if torch_env is not None:
        torch_env.path.mkdir()
        (torch_env.path / ".complete").write_text('{"torch": "2.14.1+cu130", "cuda": "13.0"}')
    wheel = _empty_wheel(tmp_path)
    importcheck.check_import(
        wheel, ("pkg", "pkg._C"), torch_env, tmp_path / "venv",
        python="python3", log=tmp_path / "log", requires=("numpy", "torchvision"), run=run,
    )  # fmt: skip
    pins = tmp_path / "venv-torch.txt"
    pin: list[str] = [] if torch_free else ["--constraint", str(pins)]
    if index != "pip":
        pin += ["--extra-index-url", index]
    assert _installs(run) == [
        [*pin, "--", "numpy", "torchvision"],
        ["--no-deps", "--no-index", str(wheel)],
    ]
    assert torch_free or pins.read_text() == "torch==2.14.1+cu130\n"
    first = [] if torch_free else ["torch"]
    assert _children(run) == [[importcheck.IMPORT_PROGRAM, *first, "pkg", "pkg._C"]]


@pytest.mark.parametrize(
    ("build_id", "flags"),
    [
        ("pytorch3d-0.7.9-cu130torch2.14-cp312-win_amd64", "-Xcompiler /Zc:preprocessor"),
        ("pytorch3d-0.7.9-cu126torch2.9-cp312-win_amd64", None),  # CCCL 2: no such need
        ("pytorch3d-0.7.9-cu130torch2.14-cp312-linux_x86_64", None),
    ],
)
def test_windows_builds_get_compat_yamls_nvcc_flags_for_their_cuda(
    build_id: str, flags: str | None
) -> None:
    """CUDA 13's CCCL refuses MSVC's traditional preprocessor: every Windows build of a CUDA 13
    cell passes /Zc:preprocessor to nvcc's host pass (compat.yaml msvc_nvcc_flags), after the
    NVCC_APPEND_FLAGS already set; Linux and CUDA 12 builds get nothing."""
    from wheelfarm.builder.platforms.windows import append_nvcc_flags

    matrix = load_matrix(REPO)
    target = resolve(matrix, expand(matrix), build_id)
    assert append_nvcc_flags({}, target.nvcc_flags).get("NVCC_APPEND_FLAGS") == flags
    if flags:
        before = {"NVCC_APPEND_FLAGS": "-DX"}
        assert append_nvcc_flags(before, target.nvcc_flags) == {"NVCC_APPEND_FLAGS": f"-DX {flags}"}


@pytest.mark.parametrize(
    ("child", "code", "named"),
    [
        (
            (
                'Traceback (most recent call last):\n  File "<string>", line 3, in <module>\n'
                "    importlib.import_module(name)\n    ^^^^^^\n"
                "ImportError: libcudart.so.13: cannot open shared object file\n"
            ),
            1,
            "ImportError: libcudart.so.13: cannot open shared object file",
        ),
        ("", -7, "crashed: killed by SIGBUS (signal 7)"),
    ],
)
def test_a_failed_import_check_names_the_exception(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, child: str, code: int, named: str
) -> None:
    """After an 11-minute compile the line must say why the import failed, not only that it did."""
    from wheelfarm.builder import importcheck

    log = tmp_path / "7-verify.log"

    def dies(argv: list[str]) -> str:
        if importcheck.IMPORT_PROGRAM not in argv:
            return ""  # the venv and pip
        log.write_text(f"+ python -c ...\n{child}")
        msg = "command failed"
        raise CommandFailedError(msg, code)

    wheel = _empty_wheel(tmp_path)
    with pytest.raises(VerifyError) as caught:
        importcheck.check_import(
            wheel,
            ("pkg._C",),
            None,
            tmp_path / "venv",
            python="python3",
            log=log,
            run=Recorder(dies),
        )
    assert caught.value.problems == [
        f"import of pkg._C failed in a fresh venv with its torch: {named}; log: {log}"
    ]


def test_the_import_check_loads_every_extension_module_in_record(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A namespace package imports with its .so cut to 4 KB: each binary RECORD lists is loaded
    in its own child (a crash fails that one check), vendored .so.N and .data files are not."""
    from wheelfarm.builder import envs, importcheck
    from wheelfarm.core import loadcheck

    wheel = tmp_path / "pkg-1.0-cp312-cp312-linux_x86_64.whl"
    record = (
        "pkg/ext/_C.cpython-312-x86_64-linux-gnu.so,sha256=x,4096\n"
        "pkg/ops.abi3.so,sha256=x,1\n"
        "pkg.libs/libgomp-a1.so.1,sha256=x,1\n"
        "pkg-1.0.data/scripts/x.so,sha256=x,1\n"
        "../evil.so,sha256=x,1\n"
        "pkg-1.0.dist-info/RECORD,,\n"
    )
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg-1.0.dist-info/RECORD", record)
    run = _venv_runner(tmp_path)
    torch_env = envs.TorchEnv(tmp_path / "torch", "2.14.1", "cu130", "pip")
    importcheck.check_import(
        wheel, ("pkg",), torch_env, tmp_path / "venv", python="python3", log=tmp_path / "l", run=run
    )
    program = loadcheck.LOAD_PROGRAM
    assert _children(run) == [
        [importcheck.IMPORT_PROGRAM, "torch", "pkg"],
        [program, "torch", "", "pkg/ext/_C.cpython-312-x86_64-linux-gnu.so"],
        [program, "torch", "", "pkg/ops.abi3.so"],
    ]


@pytest.mark.parametrize("gpu", [True, False])
def test_import_gpu_modules_are_imported_only_where_a_gpu_is(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    gpu: bool,
) -> None:
    """A module that asks for the GPU at import is checked on a GPU builder, and a GPU-less
    builder says it skipped it instead of failing or dropping it silently."""
    from wheelfarm.builder import importcheck

    run = _venv_runner(tmp_path)
    monkeypatch.setattr(importcheck.driver, "driver_loads", lambda: gpu)  # ctypes, no process
    wheel = _empty_wheel(tmp_path)
    caplog.set_level("INFO")
    importcheck.check_import(
        wheel, ("pkg",), None, tmp_path / "venv",
        python="python3", log=tmp_path / "log", gpu_imports=("pkg.cuda_ops",), run=run,
    )  # fmt: skip
    assert [c[1:] for c in _children(run)] == [["pkg", "pkg.cuda_ops"] if gpu else ["pkg"]]
    skipped = "skipped pkg.cuda_ops (import_gpu): they need a GPU, and this builder has none"
    assert (skipped in caplog.text) is not gpu


SYSCONFIG = "import sysconfig;"  # envs asks a venv where its folders are


def _venv_runner(tmp_path: Path) -> Recorder:
    """A runner for the import check: venvs, pip and the children succeed, and a venv's
    sysconfig answers with a folder under `tmp_path` (the torch env's .pth goes there)."""

    def answer(argv: list[str]) -> str:
        if argv[1:2] == ["-c"] and argv[2].startswith(SYSCONFIG):
            folder = tmp_path / "site" / str(len(list(tmp_path.glob("site/*"))))
            folder.mkdir(parents=True)
            return f"{folder}\n"
        return ""

    return Recorder(answer)


def _empty_wheel(tmp_path: Path) -> Path:
    """A wheel with no binaries: nothing to load, no driver to stub."""
    wheel = tmp_path / "pkg-1.0-cp312-cp312-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("pkg-1.0.dist-info/RECORD", "pkg-1.0.dist-info/RECORD,,\n")
    return wheel


def _installs(run: Recorder) -> list[list[str]]:
    """What each `pip install` the runner saw installed (after pip's own flags)."""
    flag = "--disable-pip-version-check"
    return [c[c.index(flag) + 1 :] for c in run.commands if "install" in c and flag in c]


def _children(run: Recorder) -> list[list[str]]:
    """The import check's children: each `python -c PROGRAM ARGS...`, from PROGRAM on."""
    return [c[2:] for c in run.commands if c[1:2] == ["-c"] and not c[2].startswith(SYSCONFIG)]
