"""Tests of what serve does (filed by module: tests/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_serve_answers_400_for_a_nul_byte_and_logs_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    from wheelfarm.index.serve import _Handler

    class Probe(_Handler):
        def __init__(self, path: str) -> None:  # a request without a socket
            self.path, self.directory, self.wfile = path, str(tmp_path), io.BytesIO()
            self.request_version, self.command, self.close_connection = "HTTP/1.1", "GET", True
            self.requestline = f"GET {path} HTTP/1.1"
            self.headers = {}  # type: ignore[assignment]

    for path in ("/files/%00", "/files/%00.whl", "/a%00b/"):
        probe = Probe(path)
        assert probe.send_head() is None
        status = probe.wfile.getvalue().split(b"\r\n", 1)[0]
        assert status.split()[1] == b"400", status
    assert "Traceback" not in capsys.readouterr().err
