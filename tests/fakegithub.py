"""A local stand-in for GitHub's REST API (releases and assets), because GitHub cannot be reached
here. It answers with the documented response shapes (docs.github.com/rest/releases): Link
pagination at per_page, `digest` on assets, 404 for unknown tags, 422 past 1000 assets, and
403 rate-limit answers with X-RateLimit-Reset when told to. Every request is logged."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlparse


@dataclass
class FakeGitHub:
    repo: str = "octo/farm"
    base: str = ""
    releases: list[dict[str, Any]] = field(default_factory=list)
    blobs: dict[int, bytes] = field(default_factory=dict)
    log: list[tuple[str, str]] = field(default_factory=list)
    rate_limited: dict[str, int] = field(default_factory=dict)  # path prefix -> 403s to send
    with_digest: bool = True
    max_assets: int = 1000
    _next_id: int = 1

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def add_release(self, tag: str) -> dict[str, Any]:
        rid = self.new_id()
        release = {
            "id": rid,
            "tag_name": tag,
            "name": tag,
            "draft": False,
            "prerelease": False,
            "url": f"{self.base}/repos/{self.repo}/releases/{rid}",
            "upload_url": f"{self.base}/uploads/repos/{self.repo}/releases/{rid}/assets{{?name,label}}",
            "assets": [],
        }
        self.releases.append(release)
        return release

    def add_asset(self, release: dict[str, Any], name: str, data: bytes) -> dict[str, Any]:
        aid = self.new_id()
        asset = {
            "id": aid,
            "name": name,
            "label": None,
            "state": "uploaded",
            "content_type": "application/octet-stream",
            "size": len(data),
            "download_count": 0,
            "created_at": "2026-11-30T00:00:00Z",
            "updated_at": "2026-11-30T00:00:00Z",
            "url": f"{self.base}/repos/{self.repo}/releases/assets/{aid}",
            "browser_download_url": f"{self.base}/download/{release['tag_name']}/{quote(name)}",
        }
        if self.with_digest:
            asset["digest"] = "sha256:" + hashlib.sha256(data).hexdigest()
        release["assets"].append(asset)
        self.blobs[aid] = data
        return asset


def _page(items: list[Any], query: dict[str, list[str]], url: str) -> tuple[list[Any], str | None]:
    per = int(query.get("per_page", ["30"])[0])
    page = int(query.get("page", ["1"])[0])
    chunk = items[(page - 1) * per : page * per]
    link = None
    if page * per < len(items):
        link = f'<{url}?per_page={per}&page={page + 1}>; rel="next"'
    return chunk, link


class _Handler(http.server.BaseHTTPRequestHandler):
    fake: FakeGitHub

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def _send(
        self,
        status: int,
        body: Any = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> None:
        data = raw if raw is not None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header(
            "Content-Type", "application/octet-stream" if raw is not None else "application/json"
        )
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str) -> None:
        fake = self.fake
        parsed = urlparse(self.path)
        path, query = unquote(parsed.path), parse_qs(parsed.query)
        fake.log.append((method, self.path))
        for prefix, count in list(fake.rate_limited.items()):
            if path.startswith(prefix) and count > 0:
                fake.rate_limited[prefix] = count - 1
                self._send(
                    403,
                    {"message": "API rate limit exceeded"},
                    {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + 1)},
                )
                return
        repo = f"/repos/{fake.repo}"
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if method == "GET" and path == f"{repo}/releases":
            items, link = _page(fake.releases, query, f"{fake.base}{path}")
            self._send(200, items, {"Link": link} if link else None)
        elif method == "GET" and path.startswith(f"{repo}/releases/tags/"):
            tag = path.rsplit("/", 1)[-1]
            match = next((r for r in fake.releases if r["tag_name"] == tag), None)
            self._send(200, match) if match else self._send(404, {"message": "Not Found"})
        elif method == "POST" and path == f"{repo}/releases":
            self._send(201, fake.add_release(json.loads(body)["tag_name"]))
        elif method == "GET" and path.startswith(f"{repo}/releases/assets/"):
            aid = int(path.rsplit("/", 1)[-1])
            self._send(200, raw=fake.blobs[aid])
        elif method == "DELETE" and path.startswith(f"{repo}/releases/assets/"):
            aid = int(path.rsplit("/", 1)[-1])
            for r in fake.releases:
                r["assets"] = [a for a in r["assets"] if a["id"] != aid]
            self._send(204, raw=b"")
        elif method == "GET" and path.startswith(f"{repo}/releases/") and path.endswith("/assets"):
            rid = int(path.split("/")[-2])
            release = next(r for r in fake.releases if r["id"] == rid)
            items, link = _page(release["assets"], query, f"{fake.base}{path}")
            self._send(200, items, {"Link": link} if link else None)
        elif method == "POST" and path.startswith(f"/uploads{repo}/releases/"):
            rid = int(path.split("/")[-2])
            release = next(r for r in fake.releases if r["id"] == rid)
            name = query["name"][0]
            if any(a["name"] == name for a in release["assets"]):
                self._send(
                    422, {"message": "Validation Failed", "errors": [{"code": "already_exists"}]}
                )
            elif len(release["assets"]) >= fake.max_assets:
                self._send(422, {"message": "Validation Failed", "errors": [{"code": "too_many"}]})
            else:
                self._send(201, fake.add_asset(release, name, body))
        elif method == "GET" and path.startswith("/download/"):
            _, _, tag, name = path.split("/", 3)
            release = next(r for r in fake.releases if r["tag_name"] == tag)
            asset = next(a for a in release["assets"] if a["name"] == name)
            self._send(200, raw=fake.blobs[asset["id"]])
        else:
            self._send(404, {"message": "Not Found"})

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_DELETE(self) -> None:
        self._route("DELETE")


@contextmanager
def fake_github(fake: FakeGitHub | None = None) -> Iterator[FakeGitHub]:
    fake = fake or FakeGitHub()
    handler = type("Handler", (_Handler,), {"fake": fake})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    fake.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
