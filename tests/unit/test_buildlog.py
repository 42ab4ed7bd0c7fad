"""A failed build's one line names its cause: the first compiler error of the log (gcc, nvcc,
cicc, cl, a linker), not pip's summary; progress lines skip caret lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wheelfarm.core import buildlog, loadcheck, proc

PIP_TAIL = [
    "  error: subprocess-exited-with-error",
    "  ERROR: Failed building wheel for pkg",
    "error: command '/usr/local/cuda/bin/nvcc' failed with exit code 1",
]


@pytest.mark.parametrize(
    "line",
    [
        'csrc/k.cu(41): error: no suitable conversion function from "DeprecatedTypeProperties" to "ScalarType" exists',
        "csrc/ops.cpp:12:5: error: 'foo' was not declared in this scope",
        "csrc/ops.cpp:3:10: fatal error: cuda_fp8.h: No such file or directory",
        r"C:\\src\\ops.cpp(12): error C2065: 'ssize_t': undeclared identifier",
        "ops.obj : error LNK2019: unresolved external symbol cudaLaunchKernel",
        "nvcc fatal   : Unsupported gpu architecture 'compute_120'",
    ],
)
def test_the_first_compiler_error_is_the_cause(line: str) -> None:
    lines = ["+ pip wheel . --no-deps", "building 'ext' extension", line, *PIP_TAIL]
    assert buildlog.cause(lines) == " ".join(line.split())


def test_pip_summaries_are_no_cause() -> None:
    assert buildlog.cause(["+ pip wheel .", *PIP_TAIL]) is None


def test_a_failed_compile_names_the_error_and_log_not_the_pip_command(tmp_path: Path) -> None:
    log = tmp_path / "4-compile.log"
    log.write_text(
        "\n".join(["+ pip wheel . -v", 'x.cu(7): error: identifier "y" is undefined', *PIP_TAIL])
    )
    line = proc._failure("/venv/bin/pip", "/venv/bin/pip wheel . -v --no-deps", 1, log)
    assert (
        line
        == f'pip failed with exit code 1: x.cu(7): error: identifier "y" is undefined; log: {log}'
    )


def test_a_log_without_compiler_error_still_names_the_command(tmp_path: Path) -> None:
    log = tmp_path / "6-repair.log"
    log.write_text("nothing useful\n")
    assert proc._failure("auditwheel", "auditwheel repair w.whl", 2, log).endswith(
        f"auditwheel repair w.whl; log: {log}"
    )


@pytest.mark.parametrize("line", ["      |     ^~~~~~~~", "        ^", "   12 |   ~~~^~~"])
def test_caret_lines_are_not_progress(line: str, tmp_path: Path) -> None:
    assert buildlog.is_caret(line)
    log = tmp_path / "l.log"
    log.write_text(f"[3/9] nvcc -c k.cu\nk.cu:3:1: warning: unused\n{line}\n")
    assert proc._last_line(log) == "k.cu:3:1: warning: unused"


@given(st.lists(st.text(max_size=400), max_size=30))
def test_any_log_gives_one_short_line_or_none(lines: list[str]) -> None:
    found = buildlog.cause(lines)
    assert found is None or ("\n" not in found and len(found) <= buildlog.WIDTH)
    assert len(buildlog.around(lines)) <= buildlog.CONTEXT


def test_the_exception_is_the_last_tracebacks_last_line() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "<string>", line 1, in <module>',
        "RuntimeError: first",
        "+ python -c ...",
        "Traceback (most recent call last):",
        '  File "x.py", line 2, in <module>',
        "    import pkg._C",
        "    ^^^^^^^^^^^^^",
        "OSError: pkg/_C.so: undefined symbol: _ZN3c10",
    ]
    assert buildlog.exception(lines) == "OSError: pkg/_C.so: undefined symbol: _ZN3c10"
    assert buildlog.exception(lines[3:4]) is None


def test_a_child_killed_by_a_signal_names_it() -> None:
    assert loadcheck.died(-7, []) == "crashed: killed by SIGBUS (signal 7)"
    assert loadcheck.died(-11, ["Fatal Python error"]) == "crashed: killed by SIGSEGV (signal 11)"
    assert loadcheck.died(1, ["Traceback (most recent call last):", "OSError: x"]) == "OSError: x"
    assert loadcheck.died(3, ["bye"]) == "exited with code 3, no traceback"


@given(st.lists(st.text(max_size=60), max_size=20))
def test_extension_members_are_safe_relative_paths(names: list[str]) -> None:
    for member in loadcheck.extension_members(names):
        assert member.endswith((".so", ".pyd"))
        assert not member.startswith("/") and ".." not in member.split("/")
