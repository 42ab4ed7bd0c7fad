"""`wheelfarm serve`: a static file server for a built site, for local use and tests."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http import HTTPStatus
from io import BytesIO
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote, urlsplit


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {  # noqa: RUF012 - the stdlib's own instance attribute, widened
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".whl": "application/octet-stream",
        ".metadata": "text/plain",
        ".json": "application/json",
        ".svg": "image/svg+xml",
    }

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        """Quiet by default: pip and uv fetch many pages."""

    def send_head(self) -> BinaryIO | BytesIO | None:
        """A path no file can have (a NUL byte: open() raises, and the stdlib server logs a
        traceback and drops the connection) is a 400, not a crash."""
        if "\0" in unquote(urlsplit(self.path).path):
            self.send_error(HTTPStatus.BAD_REQUEST, "no file name holds a NUL byte")
            return None
        return super().send_head()


def make_server(
    root: Path, host: str = "127.0.0.1", port: int = 0
) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(_Handler, directory=str(root))
    return http.server.ThreadingHTTPServer((host, port), handler)


@contextmanager
def served(root: Path, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve `root` on a free port in a thread for the `with` block; yield its base URL."""
    server = make_server(root, host)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
