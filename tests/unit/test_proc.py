"""Tests of what proc does (filed by module: tests/README.md)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.runner import Recorder
from tests.unit.helpers.wheels import _empty_wheel
from wheelfarm.core import proc
from wheelfarm.core.errors import VerifyError
from wheelfarm.core.proc import CommandFailedError


def test_waits_end_at_the_heartbeat_or_the_deadline_whichever_is_first() -> None:
    assert proc._wait(60.0, None) == 60.0
    assert proc._wait(None, None) is None
    assert proc._wait(60.0, time.time() + 5) <= 5  # type: ignore[operator]
    assert proc._wait(None, time.time() - 5) == 0.0


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


def test_the_log_counts_a_python_program_instead_of_echoing_its_source() -> None:
    program = "import sys\nfor name in sys.argv[1:]:\n    __import__(name)\n"
    shown = proc.shown_command(["/venv/bin/python", "-c", program, "torch", "demo._C"])
    assert shown == "/venv/bin/python -c '<a 3-line program>' torch demo._C"
    assert proc.shown_command(["python", "-c", "print(1)"]) == "python -c 'print(1)'"
