"""Tests of what windows does (filed by module: tests/README.md)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.runner import Recorder
from wheelfarm.builder import ccache
from wheelfarm.builder.platforms import WINDOWS, append_nvcc_flags, linux, windows
from wheelfarm.builder.target import Target, resolve
from wheelfarm.builder.wrapper import SPEC, Spec, command
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix


def test_each_makes_its_empty_object_with_its_host_compiler(tmp_path: Path, ran: Recorder) -> None:
    obj = windows.Windows(ran).empty_object({"NVCC_CCBIN": "C:/msvc/cl.exe", "PATH": ""}, tmp_path)
    assert obj == tmp_path / "empty.obj"
    src = str(tmp_path / "empty.c")
    assert ran.commands.pop() == ["C:/msvc/cl.exe", "/nologo", "/c", src, f"/Fo{obj}"]
    cc = tmp_path / "bin" / "cc"
    cc.parent.mkdir()
    cc.write_text("")
    cc.chmod(0o755)
    assert linux.Linux(ran).empty_object({"PATH": str(cc.parent)}, tmp_path) == tmp_path / "empty.o"
    assert ran.commands.pop() == [str(cc), "-c", src, "-o", str(tmp_path / "empty.o")]
    assert (tmp_path / "empty.c").read_text().startswith("/* stub object")


CL_RULE = "cl /showIncludes $cflags -c $in /Fo$out $post_cflags"


NVCC_RULE = (
    "$nvcc --generate-dependencies-with-compile --dependency-output $out.d "
    "$cuda_cflags -c $in -o $out $cuda_post_cflags"
)


COMMON_MSVC_FLAGS = ("/MD", "/wd4819", "/wd4251", "/wd4244", "/wd4267", "/wd4275", "/wd4018",
                     "/wd4190", "/wd4624", "/wd4067", "/wd4068", "/EHsc")  # fmt: skip


CUDA_CFLAGS = (
    "-std=c++17", *(a for f in COMMON_MSVC_FLAGS for a in ("-Xcompiler", f)), "--use-local-env",
    "-Xcudafe", "--diag_suppress=base_class_has_different_dll_interface", "-IC:/torch/include",
)  # fmt: skip


# woct0rdho's SageAttention setup.py (and mmcv's platform_env) adds these to its
# nvcc flags on Windows: they arrive in cuda_post_cflags and must reach nvcc as they are
PACKAGE_NVCC = ("-O3", "-D_WIN32=1", "-DUSE_CUDA=1")


# What vcvars64 sets that the farm imports (scripts/install-cuda-windows.ps1), as recorded
VCVARS = {
    "INCLUDE": "C:/VS/VC/Tools/MSVC/14.44.35207/include;C:/Kits/10/include/10.0.26100.0/ucrt",
    "LIB": "C:/VS/VC/Tools/MSVC/14.44.35207/lib/x64;C:/Kits/10/lib/10.0.26100.0/ucrt/x64",
    "LIBPATH": "C:/VS/VC/Tools/MSVC/14.44.35207/lib/x64",
    "VCToolsVersion": "14.44.35207",
    "WindowsSDKVersion": "10.0.26100.0/",
}


def _expand(rule: str, variables: dict[str, str]) -> list[str]:
    """The argv ninja starts for `rule` (no variable here holds a space; Windows splits the
    command line at spaces)."""
    return re.sub(r"\$([A-Za-z0-9_-]+)", lambda m: variables[m[1]], rule).split()


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(path.name.encode())
    path.chmod(0o755)
    return path


@pytest.fixture
def farm_env(tmp_path: Path) -> dict[str, str]:
    """The environment a cu130 Windows build compiles in: vcvars' variables, the toolkit, ccache
    and MSVC's cl.exe on PATH, then the farm's compile_env, the target's nvcc_flags and shims."""
    _exe(tmp_path / "tools" / "ccache")
    _exe(tmp_path / "msvc" / "cl.exe")
    _exe(tmp_path / "cuda" / "bin" / "nvcc.exe")
    env = {
        **VCVARS,
        "PATH": os.pathsep.join([str(tmp_path / "tools"), str(tmp_path / "msvc")]),
        "NVCC_APPEND_FLAGS": "-DFROM_THE_PACKAGE",
    }
    env.update(WINDOWS.compile_env(env, tmp_path))
    matrix = load_matrix(REPO)
    target = resolve(matrix, expand(matrix), "pytorch3d-0.7.9-cu130torch2.14-cp312-win_amd64")
    env.update(append_nvcc_flags(env, target.nvcc_flags))
    torch = tmp_path / "env" / "Lib" / "site-packages" / "torch" / "include"
    (torch / "torch").mkdir(parents=True)
    return ccache.wrap_compilers(
        env, tmp_path / "cuda", tmp_path / "shims", base=tmp_path, platform=WINDOWS,
        headers=ccache.Headers(torch=torch),
    )  # fmt: skip


def test_the_cl_rule_starts_the_farms_wrapper_which_runs_ccache_and_the_real_cl(
    tmp_path: Path, farm_env: dict[str, str]
) -> None:
    torch = tmp_path / "env" / "Lib" / "site-packages" / "torch" / "include"
    argv = _expand(CL_RULE, {"cflags": f"/O2 -I{torch}", "in": "C:/src/a.cpp",
                             "out": "a.obj", "post_cflags": "/std:c++17"})  # fmt: skip
    assert argv == ["cl", "/showIncludes", "/O2", f"-I{torch}", "-c", "C:/src/a.cpp",
                    "/Foa.obj", "/std:c++17"]  # fmt: skip
    path = farm_env["PATH"].split(os.pathsep)
    # Windows takes the first cl on PATH: the farm's launcher (builder/wrapper.py), which runs
    # ccache with MSVC's own cl.exe and the arguments, torch's folder as its view
    assert path[0] == str(tmp_path / "shims") and (tmp_path / "shims" / "cl").is_file()
    spec = Spec.from_env(farm_env)
    assert command("cl", argv[1:], spec, farm_env) == [
        str(tmp_path / "tools" / "ccache"), str(tmp_path / "msvc" / "cl.exe"), "/showIncludes",
        "/O2", f"-I{tmp_path / 'torch-include'}", "-c", "C:/src/a.cpp", "/Foa.obj", "/std:c++17",
    ]  # fmt: skip
    assert WINDOWS.rewrites_arguments is True


def test_the_nvcc_rule_runs_ccache_then_nvcc_with_torchs_and_the_farms_flags(
    tmp_path: Path, farm_env: dict[str, str]
) -> None:
    torch = tmp_path / "env" / "Lib" / "site-packages" / "torch" / "include"
    given = [f"-I{torch}" if a == "-IC:/torch/include" else a for a in CUDA_CFLAGS]
    argv = _expand(
        NVCC_RULE,
        {"nvcc": farm_env["PYTORCH_NVCC"], "cuda_cflags": " ".join(given),
         "in": "C:/src/k.cu", "out": "k.obj", "cuda_post_cflags": " ".join(PACKAGE_NVCC)},
    )  # fmt: skip
    assert argv[0] == str(tmp_path / "shims" / "nvcc.exe")  # the farm's launcher
    # nvcc's flag variables (the package's first, compat.yaml's CUDA 13 flag after) go onto its
    # command line, where ccache hashes them; nvcc runs NVCC_CCBIN, MSVC's own cl.exe
    assert farm_env["NVCC_APPEND_FLAGS"].split() == [
        "-DFROM_THE_PACKAGE", "-Xcompiler", "/Zc:preprocessor",
    ]  # fmt: skip
    cuda_cflags = [f"-I{tmp_path / 'torch-include'}" if a == "-IC:/torch/include" else a
                   for a in CUDA_CFLAGS]  # fmt: skip
    assert command("nvcc", argv[1:], Spec.from_env(farm_env), farm_env) == [
        str(tmp_path / "tools" / "ccache"), str(tmp_path / "cuda" / "bin" / "nvcc.exe"),
        "--generate-dependencies-with-compile", "--dependency-output", "k.obj.d",
        *cuda_cflags, "-c", "C:/src/k.cu", "-o", "k.obj", *PACKAGE_NVCC,
        "-DFROM_THE_PACKAGE", "-Xcompiler", "/Zc:preprocessor",
    ]  # fmt: skip
    assert farm_env["NVCC_CCBIN"] == str(tmp_path / "msvc" / "cl.exe")


def test_the_environment_keeps_vcvars_and_adds_only_the_farms_variables(
    tmp_path: Path, farm_env: dict[str, str]
) -> None:
    assert {k: farm_env[k] for k in VCVARS} == VCVARS
    added = set(farm_env) - {*VCVARS, "PATH", "NVCC_APPEND_FLAGS"}
    assert added == {"DISTUTILS_USE_SDK", "TORCH_NO_COMPILER_WRAPPER", "PYTORCH_NVCC",
                     "NVCC_CCBIN", SPEC}  # fmt: skip
    assert farm_env["DISTUTILS_USE_SDK"] == "1"  # torch's build refuses vcvars without it
    assert farm_env["TORCH_NO_COMPILER_WRAPPER"] == "1"  # ccache already wraps: no second one
    assert farm_env["PATH"].split(os.pathsep) == [
        str(tmp_path / "shims"), str(tmp_path / "tools"), str(tmp_path / "msvc"),
    ]  # fmt: skip


# What each new Windows row's patched setup.py gives its extensions on Windows: recorded here by
# evaluating the pinned source's setup.py after its patches with os.name 'nt' (setuptools.setup
# and torch's CUDAExtension replaced by recorders; docs/packages.md, issue 51). (cxx, nvcc).
WINDOWS_ROWS = {
    "cubvh-0.1.2": (
        ("/O2", "/permissive-", "/Zc:__cplusplus", "/EHsc"),
        ("-O3", "--extended-lambda", "--expt-relaxed-constexpr", "-U__CUDA_NO_HALF_OPERATORS__",
         "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__",
         "-allow-unsupported-compiler", "-Xcompiler=/permissive-", "-Xcompiler=/Zc:__cplusplus",
         "-Xcompiler=/EHsc"),
    ),
    "cumesh-0.0.1": (
        ("/O2", "/EHsc", "/permissive-", "/Zc:__cplusplus"),
        ("-O3", "--expt-relaxed-constexpr", "--extended-lambda", "-Xcompiler=/EHsc",
         "-Xcompiler=/permissive-", "-Xcompiler=/Zc:__cplusplus", "-allow-unsupported-compiler"),
    ),
    "custom-rasterizer-0.1": ((), ()),
    "drtk-0.1.0": (
        ("/EHsc", '/D "NOMINMAX"', "/O2", "/fp:fast", "/GL", '/D "NDEBUG"'),
        ("-O3", "--use_fast_math", "-std=c++20"),
    ),
    "flex-gemm-1.1.0": (
        ("/O2", "/EHsc", "/openmp", "/permissive-", "/Zc:__cplusplus"),
        ("-O3", "-Xcompiler=/EHsc", "-Xcompiler=/permissive-", "-Xcompiler=/Zc:__cplusplus",
         "--use_fast_math", "-allow-unsupported-compiler"),
    ),
    "o-voxel-0.0.1": (("-O3",), ("-O3",)),
    "nvdiffrec-render-0.0.1": (("-DNVDR_TORCH",), ("-DNVDR_TORCH",)),
    "dpvo-0.0.0": (("-O3",), ("-O3",)),
}  # fmt: skip

# cubvh's Windows branch as upstream ships it (7855c00): its cpp_standard = 17 in both compilers
CUBVH_UPSTREAM = (
    ("/O2", "/std:c++17", "/permissive-", "/Zc:__cplusplus", "/EHsc"),
    ("-O3", "-std=c++17", "--extended-lambda", "-allow-unsupported-compiler",
     "-Xcompiler=/std:c++17", "-Xcompiler=/permissive-"),
)  # fmt: skip


def _windows_split(line: str) -> list[str]:
    """What CreateProcess's argument parsing gives for a ninja command line whose arguments hold
    no quoted space (drtk's '/D "NOMINMAX"' becomes /D and NOMINMAX)."""
    return line.replace('"', "").split()


def _torch_lines(
    cxx: tuple[str, ...], nvcc: tuple[str, ...], std: str = "c++20"
) -> tuple[list[str], list[str]]:
    """torch's Windows ninja rules (cpp_extension's win_wrap_ninja_compile) expanded for a
    package's flags: cl's post_cflags gain /std:`std` only when no /std: is given; nvcc's
    cuda_cflags start with -std=`std` (c++20 from torch 2.13, c++17 before), its own flags come
    after."""
    post = [*cxx, *([] if any(f.startswith("/std:") for f in cxx) else [f"/std:{std}"])]
    cl = _windows_split(f"cl /showIncludes {' '.join(COMMON_MSVC_FLAGS)} -c C:/src/a.cpp "
                        f"/Foa.obj {' '.join(post)}")  # fmt: skip
    cuda = [f"-std={std}", *CUDA_CFLAGS[1:]]
    nv = _windows_split(f"nvcc -c C:/src/k.cu -o k.obj {' '.join(cuda)} {' '.join(nvcc)}")
    return cl, nv


def _standard(argv: list[str]) -> str:
    """The C++ standard a compile gets: cl takes its last /std:, nvcc its last -std= (nvcc 13.0:
    'incompatible redefinition for option std, the last value of this option was used'), and
    nvcc hands its host compiler a later -Xcompiler=/std: as well."""
    last = [a.split(":", 1)[1] if a.startswith(("/std:", "-Xcompiler=/std:")) else a[5:]
            for a in argv if a.startswith(("/std:", "-std=", "-Xcompiler=/std:"))]  # fmt: skip
    return last[-1] if last else "none"


@pytest.mark.parametrize("row", sorted(WINDOWS_ROWS))
def test_each_new_windows_row_compiles_as_cxx20_through_the_farms_wrapper(
    row: str, tmp_path: Path
) -> None:
    """The command lines the builder gives each issue-51 Windows row at cu130 / torch 2.14: the
    farm's wrapper runs ccache with MSVC's cl.exe / nvcc.exe, the package's flags and the farm's
    /Zc:preprocessor last, and both compilers end on C++20, which torch 2.13+'s headers need."""
    matrix = load_matrix(REPO)
    target = resolve(matrix, expand(matrix), f"{row}-cu130torch2.14-cp312-win_amd64")
    assert target.build.platform == "win_amd64"
    cl, nv = _torch_lines(*WINDOWS_ROWS[row])
    cl_argv, nv_argv = _through_the_farm(target, tmp_path, cl, nv)
    assert nv_argv[-2:] == ["-Xcompiler", "/Zc:preprocessor"]  # CCCL 3 on MSVC (compat.yaml)
    assert (_standard(cl_argv), _standard(nv_argv)) == ("c++20", "c++20")
    # its Windows patches are declared, so a build applies them (issue 51: matrix/patches)
    if row not in {"cumesh-0.0.1", "nvdiffrec-render-0.0.1"}:
        assert any("msvc" in p or "llp64" in p or "cxx-std" in p for p in target.source.patches)


def _through_the_farm(
    target: Target, tmp_path: Path, cl: list[str], nv: list[str]
) -> tuple[list[str], list[str]]:
    """What the farm's wrapper runs for torch's cl and nvcc lines of `target` on Windows: ccache
    with MSVC's cl.exe / nvcc.exe, the package's flags, and the farm's /Zc:preprocessor last."""
    _exe(tmp_path / "tools" / "ccache")
    _exe(tmp_path / "msvc" / "cl.exe")
    env = {**VCVARS, "PATH": os.pathsep.join([str(tmp_path / "tools"), str(tmp_path / "msvc")])}
    env.update(WINDOWS.compile_env(env, tmp_path))
    env.update(target.package.platform_env.get("win_amd64", {}))
    env.update(append_nvcc_flags(env, target.nvcc_flags))
    torch = tmp_path / "env" / "Lib" / "site-packages" / "torch" / "include"
    (torch / "torch").mkdir(parents=True)
    env = ccache.wrap_compilers(
        env, tmp_path / "cuda", tmp_path / "shims", base=tmp_path, platform=WINDOWS,
        headers=ccache.Headers(torch=torch),
    )  # fmt: skip
    spec = Spec.from_env(env)
    cl_argv = command("cl", cl[1:], spec, env)
    nv_argv = command("nvcc", nv[1:], spec, env)
    assert cl_argv[:2] == [str(tmp_path / "tools" / "ccache"), str(tmp_path / "msvc" / "cl.exe")]
    assert cl_argv[2:] == cl[1:]
    assert nv_argv[:2] == [str(tmp_path / "tools" / "ccache"), str(tmp_path / "cuda/bin/nvcc.exe")]
    assert nv_argv[2:] == [*nv[1:], *target.nvcc_flags]  # CUDA 13: -Xcompiler /Zc:preprocessor
    return cl_argv, nv_argv


# sageattention 2.2.0.post3's setup.py under os.name 'nt' (3abe607), evaluated here with
# setuptools.setup and CUDAExtension recorded (torch 2.14's Python; a Windows torch gives
# _GLIBCXX_USE_CXX11_ABI 0): its CXX_FLAGS and its _fused extension's nvcc flags for the farm's
# cu128 list, in the order PYTHONHASHSEED=0 (the version's env) gives its set of archs;
# --threads= is os.cpu_count(), 4 on a hosted runner.
SAGEATTENTION_POST3 = (
    ("/O2", "/openmp", "/std:c++17", "/permissive-", "-DENABLE_BF16",
     "-DPy_LIMITED_API=0x03090000", "-D_GLIBCXX_USE_CXX11_ABI=0"),
    ("-gencode", "arch=compute_120a,code=sm_120a", "-gencode", "arch=compute_80,code=sm_80",
     "-gencode", "arch=compute_89,code=sm_89", "-gencode", "arch=compute_90a,code=sm_90a",
     "-O3", "-std=c++17", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
     "--use_fast_math", "--threads=4", "-diag-suppress=174", "-diag-suppress=177",
     "-diag-suppress=221", "-D_WIN32=1", "-DUSE_CUDA=1", "-D_GLIBCXX_USE_CXX11_ABI=0"),
)  # fmt: skip


def test_sageattention_post3_serves_windows_on_torch_2_8_and_2_9_as_cxx17(tmp_path: Path) -> None:
    """Issue 51's sageattention row: the per-torch 2.2.0.post3 is planned for win_amd64 on torch
    2.8 and 2.9 only, with its own suffix and arch list (no 10.0a: its setup.py has no sm100
    branch); torch 2.8's headers take C++17, which both of its compilers end on."""
    matrix = load_matrix(REPO)
    exp = expand(matrix)
    post3 = {(c.torch, b.cuda, b.platform) for b in exp.builds for c in b.covers
             if b.package == "sageattention" and b.version == "2.2.0.post3"}  # fmt: skip
    assert {(torch, plat) for torch, _, plat in post3} == {
        ("2.8", "win_amd64"),
        ("2.9", "win_amd64"),
    }
    target = resolve(matrix, exp, "sageattention-2.2.0.post3-cu128torch2.8-cp39-abi3-win_amd64")
    assert target.build.archs.listed == "8.0;8.9;9.0a;12.0a"
    env = target.package.env_for("cu128", "win_amd64", target.build.archs, "2.2.0.post3")
    assert env["SAGEATTENTION_WHEEL_VERSION_SUFFIX"] == ".post3"  # the wheel's 2.2.0.post3
    assert env["PYTHONHASHSEED"] == "0"  # one -gencode order, run after run
    cl, nv = _torch_lines(*SAGEATTENTION_POST3, std="c++17")
    cl_argv, nv_argv = _through_the_farm(target, tmp_path, cl, nv)
    assert (_standard(cl_argv), _standard(nv_argv)) == ("c++17", "c++17")
    assert "/Zc:preprocessor" not in nv_argv  # CUDA 12's CCCL 2 does not ask for it
    newest = resolve(
        matrix, exp, "sageattention-2.2.0.post6-cu130torch2.10.stable-cp310-abi3-win_amd64"
    )
    assert "10.0a" in newest.build.archs.listed  # the stable-ABI release keeps its sm100 kernels


def test_cubvh_as_upstream_ships_it_would_compile_cxx17_on_windows() -> None:
    """The guard's reason: without the cxx-std patch's Windows half, both compilers end on
    cubvh's own C++17 (cl's last /std: and nvcc's last -std=), which torch 2.13+ refuses."""
    cl, nv = _torch_lines(*CUBVH_UPSTREAM)
    assert (_standard(cl), _standard(nv)) == ("c++17", "c++17")


def test_natten_on_windows_builds_no_blackwell_datacenter_kernels_and_no_cuda_12() -> None:
    """natten's Windows row: CUDA 13 only (its setup.py's CUDA 12 warning) and no 10.0 (MSVC
    refuses CUTLASS's sm100 FMHA backward kernel); Linux keeps 10.0."""
    matrix = load_matrix(REPO)
    exp = expand(matrix)
    win = resolve(matrix, exp, "natten-0.21.7-cu130torch2.14-cp312-win_amd64")
    linux = resolve(matrix, exp, "natten-0.21.7-cu130torch2.14-cp312-linux_x86_64")
    assert win.build.archs.listed == "7.5;8.0;8.6;9.0;12.0"
    assert "10.0" in linux.build.archs.listed
    assert not [b for b in exp.builds if b.package == "natten" and b.platform == "win_amd64"
                and b.cuda.startswith("cu12")]  # fmt: skip
    assert "natten-0.21.7-msvc.patch" in win.source.patches
