"""builder/wrapper.py: the Windows cl and nvcc wrappers rewrite the env's header folders to their
views, so a group's Pythons hash the same arguments (docs/adr/0016-python-groups.md). cl.exe and
nvcc.exe cannot run here: these pin the argument lists the wrappers build."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from wheelfarm.builder.ccache import PYTHON_VIEW, TORCH_VIEW
from wheelfarm.builder.platforms.common import Views
from wheelfarm.builder.platforms.windows import Windows
from wheelfarm.builder.wrapper import SPEC, Spec, command, rewrite_argument

WORK = r"D:\a\farm\farm\.wheelfarm\work\flash-attn"
SOURCE = rf"{WORK}\src"


def _env(python: str) -> tuple[str, str]:
    """(torch's include folder, Python's) of one interpreter's torch env on a hosted runner."""
    tag = f"cp{python.replace('.', '')}"
    env = rf"D:\a\farm\farm\.wheelfarm\cache\envs\torch2.14.1-cu130-{tag}-0f3a"
    return (
        rf"{env}\Lib\site-packages\torch\include",
        rf"C:\hostedtoolcache\windows\Python\{python}.9\x64\Include",
    )


def _spec(python: str) -> Spec:
    torch, include = _env(python)
    views = {torch: rf"{WORK}\{TORCH_VIEW}", include: rf"{WORK}\{PYTHON_VIEW}"}
    return Spec(ccache="ccache.exe", cl="cl.exe", nvcc=r"C:\cuda\bin\nvcc.exe", rewrite=views)


def _cl_args(python: str) -> list[str]:
    """What torch 2.14's cpp_extension writes into build.ninja for one MSVC compile
    (torch/utils/cpp_extension.py: `rule compile` runs `cl /showIncludes $cflags -c $in /Fo$out
    $post_cflags`; each include folder one -I from distutils' gen_preprocess_options)."""
    torch, include = _env(python)
    temp = rf"{SOURCE}\build\temp.win-amd64-cpython-{python.replace('.', '')}\Release"
    return [
        "/showIncludes", "/nologo", "/O2", "/W3", "/GL", "/DNDEBUG", "/MD", "/wd4819",
        "/wd4251", "/wd4244", "/wd4267", "/wd4275", "/wd4018", "/wd4190", "/wd4624", "/wd4067",
        "/wd4068", "/EHsc", f"-I{torch}", rf"-I{torch}\torch\csrc\api\include", f"-I{include}",
        "-c", rf"{SOURCE}\csrc\flash_api.cpp", rf"/Fo{temp}\csrc\flash_api.obj",
        "-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=_C", "/std:c++20",
    ]  # fmt: skip


def _nvcc_args(python: str) -> list[str]:
    """The same for nvcc (`rule cuda_compile`: `$nvcc --use-local-env -c $in -o $out
    $cuda_cflags $cuda_post_cflags`)."""
    torch, include = _env(python)
    temp = rf"{SOURCE}\build\temp.win-amd64-cpython-{python.replace('.', '')}\Release"
    return [
        "--use-local-env", "-c", rf"{SOURCE}\csrc\fwd.cu", "-o", rf"{temp}\csrc\fwd.obj",
        "-Xcudafe", "--diag_suppress=dll_interface_conflict_dllexport_assumed", "-Xcompiler",
        "/MD", f"-I{torch}", rf"-I{torch}\torch\csrc\api\include", f"-I{include}",
        "-D__CUDA_NO_HALF_OPERATORS__", "--expt-relaxed-constexpr",
        "-gencode=arch=compute_90,code=sm_90", "-std=c++20",
    ]  # fmt: skip


def _hashed(cmd: list[str]) -> list[str]:
    """The arguments ccache hashes: not the output file (/Fo, -o's value)."""
    out = []
    skip = False
    for arg in cmd:
        if skip or arg.startswith("/Fo"):
            skip = False
            continue
        skip = arg == "-o"
        out.append(arg)
    return out


def test_two_pythons_give_cl_and_nvcc_the_same_arguments() -> None:
    for args in (_cl_args, _nvcc_args):
        tool = "cl" if args is _cl_args else "nvcc"
        made = {p: command(tool, args(p), _spec(p), {}) for p in ("3.11", "3.12")}
        assert _hashed(made["3.11"]) == _hashed(made["3.12"])  # the cache key names no Python
        assert _hashed(args("3.11")) != _hashed(args("3.12"))  # which it did before
        assert rf"-I{WORK}\{TORCH_VIEW}\torch\csrc\api\include" in made["3.11"]
        assert made["3.11"][:2] == [
            "ccache.exe",
            "cl.exe" if tool == "cl" else r"C:\cuda\bin\nvcc.exe",
        ]


def test_windows_paths_match_without_case_and_with_either_slash() -> None:
    views = {r"C:\Env\Lib\site-packages\torch\include": r"D:\w\torch-include"}
    assert rewrite_argument("-Ic:/env/lib/site-packages/torch/include/ATen", views) == (
        r"-ID:\w\torch-include/ATen"
    )
    assert rewrite_argument(r"/IC:\ENV\Lib\site-packages\torch\include", views) == (
        r"/ID:\w\torch-include"
    )
    # a folder whose name only starts like it is another folder
    assert rewrite_argument(r"-IC:\Env\Lib\site-packages\torch\include2", views).endswith(
        "include2"
    )


def test_nvcc_takes_its_flag_variables_on_the_command_line_and_cl_does_not() -> None:
    environ = {"NVCC_PREPEND_FLAGS": "-DA=1", "NVCC_APPEND_FLAGS": "-Xptxas=-O3 -lineinfo"}
    spec = Spec(ccache="cc", cl="cl", nvcc="nvcc", rewrite={}, include=(r"D:\w\library-include\0",))
    assert command("nvcc", ["-c", "x.cu"], spec, environ) == [
        "cc", "nvcc", "-DA=1", "-c", "x.cu", r"-ID:\w\library-include\0", "-Xptxas=-O3", "-lineinfo",
    ]  # fmt: skip
    assert command("cl", ["/c", "x.cpp"], spec, environ) == [
        "cc", "cl", "/c", "x.cpp", r"-ID:\w\library-include\0",
    ]  # fmt: skip


def test_the_windows_shims_hand_the_wrappers_their_spec(tmp_path: Path) -> None:
    msvc = tmp_path / "msvc"
    msvc.mkdir()
    (msvc / "cl.exe").write_bytes(b"")
    (msvc / "cl.exe").chmod(0o755)
    torch, _ = _env("3.12")
    views = Views({torch: str(tmp_path / TORCH_VIEW)}, (tmp_path / "library-include" / "0",))
    env = Windows().compiler_shims(
        {"PATH": str(msvc)}, "ccache.exe", Path(r"C:\cuda"), tmp_path / "shims", tmp_path, views
    )
    assert env["PATH"].split(":")[0] == str(tmp_path / "shims")  # its cl leads PATH
    assert env["PYTORCH_NVCC"] == str(tmp_path / "shims" / "nvcc.exe")
    assert env["NVCC_CCBIN"] == str(msvc / "cl.exe")  # nvcc's host compiles: the real cl
    spec = Spec.from_env(env)
    assert spec.rewrite == {torch: str(tmp_path / TORCH_VIEW)}
    assert spec.include == (str(tmp_path / "library-include" / "0"),)
    assert json.loads(env[SPEC])["cl"] == str(msvc / "cl.exe")
    assert {p.name for p in (tmp_path / "shims").iterdir()} >= {"cl", "nvcc"}


@given(st.text(max_size=80), st.text(min_size=1, max_size=20), st.text(max_size=20))
def test_any_argument_is_rewritten_without_a_traceback(arg: str, old: str, new: str) -> None:
    out = rewrite_argument(arg, {old: new})
    if old.lower().replace("/", "\\") not in arg.lower().replace("/", "\\"):
        assert out == arg


def test_a_letter_that_lowers_to_two_keeps_the_rest_in_place() -> None:
    views = {r"C:\Env\torch\include": r"D:\w\torch-include"}
    assert rewrite_argument("-IİC:/env/torch/include/x", views) == r"-IİD:\w\torch-include/x"
