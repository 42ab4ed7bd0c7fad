"""A local stand-in for GitHub's REST API (releases, assets; issue comments: ghsim/fakeissues.py),
as GitHub cannot be reached here. It answers with the documented shapes and enforces the limits
(docs.github.com/rest/releases, /rest/using-the-rest-api/rate-limits-for-the-rest-api):

- Link pagination at per_page (at most 100), `digest` and `state` on assets, `label` kept;
- 404 for unknown tags and assets, 422 for a tag that exists, a name that exists (`starter`
  assets included) and past 1000 assets a release, 422 for an asset of 2 GiB or more;
- primary limit: 1000 requests an hour for the token, X-RateLimit-* headers on every answer and
  403 with X-RateLimit-Remaining: 0 past it;
- secondary limit: 80 content-creating requests (POST, PATCH, PUT, DELETE) a minute and 500 an
  hour, else 403 with Retry-After;
- an upload told to break (`break_uploads`) drops the connection and leaves a `starter` asset;
- drafts: a release made with `draft: true` is listed but not found by tag, and is published by
  PATCH draft=false (422 when a published release holds the tag); with `immutable_releases`
  (the repository setting) a published release has `immutable: true` and refuses uploads and
  deletes with 422;
- faults a hostile or unlucky API shows: `bare_refusals` (403/429 with a rate-limit message and
  no retry headers), `next_link` (every listing's `Link: rel="next"` points there: itself, or
  another host), `redirect_downloads` (an asset download answers 302 to that base, as
  api.github.com does to objects.githubusercontent.com);
- every request's Authorization header is kept in `auth` (path -> header), to show where the
  token went.

`scale` makes GitHub's hour pass that many times faster (wheelfarm's client reads the same
factor from WHEELFARM_GITHUB_TIME_SCALE). Every request is logged with its time."""

from __future__ import annotations

import bisect
import hashlib
import http.server
import json
import math
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlparse

from ghsim.fakeissues import edit_comment, issue_comments

CONTENT_CREATING = {"POST", "PATCH", "PUT", "DELETE"}
SCALE = "WHEELFARM_GITHUB_TIME_SCALE"  # the client reads the same variable


@dataclass
class FakeGitHub:
    repo: str = "octo/farm"
    base: str = ""
    releases: list[dict[str, Any]] = field(default_factory=list)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # issue -> comments
    blobs: dict[int, bytes] = field(default_factory=dict)
    log: list[tuple[str, str]] = field(default_factory=list)
    times: list[tuple[float, str]] = field(default_factory=list)  # (monotonic, method)
    rate_limited: dict[str, int] = field(default_factory=dict)  # path prefix -> 403s to send
    break_uploads: set[str] = field(default_factory=set)  # names whose next upload breaks
    with_digest: bool = True
    immutable_releases: bool = False  # the repository setting
    bare_refusals: dict[str, int] = field(default_factory=dict)  # path prefix -> bare 403s
    bare_status: int = 403
    next_link: str | None = None  # "self": each listing links to itself
    redirect_downloads: str | None = None  # base URL asset downloads redirect to
    auth: list[tuple[str, str | None]] = field(default_factory=list)
    current: dict[str, str] = field(default_factory=dict)  # X-RateLimit-* of the answer going out
    max_assets: int = 1000
    max_asset_bytes: int = 2 * 1024**3
    scale: float = field(default_factory=lambda: float(os.environ.get(SCALE, "1")))
    primary_limit: int = 1000
    per_minute: int = 80
    per_hour: int = 500
    refused: int = 0  # answers that were a rate-limit refusal
    lock: threading.Lock = field(default_factory=threading.Lock)
    _next_id: int = 1
    _window: tuple[float, int] = (0.0, 0)  # primary window start (epoch), requests in it
    # the content-creating requests' times, in order: the secondary limit looks back an hour
    # by bisection, not by a scan of every request ever answered (a whole plan makes 100,000s)
    _creating: list[float] = field(default_factory=list)

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def add_release(self, tag: str, *, draft: bool = False) -> dict[str, Any]:
        rid = self.new_id()
        release = {
            "id": rid,
            "tag_name": tag,
            "name": tag,
            "draft": draft,
            "immutable": self.immutable_releases and not draft,
            "prerelease": False,
            "url": f"{self.base}/repos/{self.repo}/releases/{rid}",
            "upload_url": f"{self.base}/uploads/repos/{self.repo}/releases/{rid}/assets{{?name,label}}",
            "assets": [],
        }
        self.releases.append(release)
        return release

    def add_asset(
        self,
        release: dict[str, Any],
        name: str,
        data: bytes,
        *,
        label: str | None = None,
        state: str = "uploaded",
    ) -> dict[str, Any]:
        aid = self.new_id()
        asset = {
            "id": aid,
            "name": name,
            "label": label,
            "state": state,
            "content_type": "application/octet-stream",
            "size": len(data),
            "download_count": 0,
            "created_at": "2026-11-30T00:00:00Z",
            "updated_at": "2026-11-30T00:00:00Z",
            "url": f"{self.base}/repos/{self.repo}/releases/assets/{aid}",
            "browser_download_url": f"{self.base}/download/{release['tag_name']}/{quote(name)}",
        }
        if self.with_digest and state == "uploaded":
            asset["digest"] = "sha256:" + hashlib.sha256(data).hexdigest()
        release["assets"].append(asset)
        self.blobs[aid] = data
        return asset

    # --- accounting on the scaled clock -------------------------------------------------------
    def reset_windows(self) -> None:
        """Forget what the rate-limit windows used so far (a test's setup is not the run)."""
        with self.lock:
            self._window = (0.0, 0)
            self._creating.clear()

    def hour(self) -> float:
        return 3600 / self.scale

    def max_content_per_hour(self) -> int:
        """The most content-creating requests answered in any window of one (scaled) hour."""
        stamps = [t for t, m in self.times if m in CONTENT_CREATING]
        best, start = 0, 0
        for end, t in enumerate(stamps):
            while stamps[start] <= t - self.hour():
                start += 1
            best = max(best, end - start + 1)
        return best

    def limits(self, method: str) -> tuple[int, dict[str, str], str] | None:
        """A refusal (status, headers, message) past a limit; else None, and it is counted."""
        now, wall = time.monotonic(), time.time()
        start, used = self._window
        if wall >= start + self.hour():
            start, used = wall, 0
        reset = str(math.ceil(start + self.hour()))
        headers = {
            "X-RateLimit-Limit": str(self.primary_limit),
            "X-RateLimit-Remaining": str(max(0, self.primary_limit - used - 1)),
            "X-RateLimit-Reset": reset,
            "X-RateLimit-Used": str(used + 1),
            "X-RateLimit-Resource": "core",
        }
        self.current = headers  # sent on this answer, whatever it is (lock held)
        if used >= self.primary_limit:
            self._window = (start, used)
            return 403, {**headers, "X-RateLimit-Remaining": "0"}, "API rate limit exceeded"
        if method in CONTENT_CREATING:
            recent = self._creating[bisect.bisect_right(self._creating, now - self.hour()) :]
            minute = [t for t in recent if t > now - self.hour() / 60]
            for window, limit, span in (
                (minute, self.per_minute, self.hour() / 60),
                (recent, self.per_hour, self.hour()),
            ):
                if len(window) >= limit:
                    wait = max(1, math.ceil(window[-limit] + span - now))
                    message = "You have exceeded a secondary rate limit"
                    return 403, {**headers, "Retry-After": str(wait)}, message
        self._window = (start, used + 1)
        self.times.append((now, method))
        if method in CONTENT_CREATING:
            self._creating.append(now)
        return None


def _page(
    items: list[Any], query: dict[str, list[str]], url: str, forced: str | None = None
) -> tuple[list[Any], str | None]:
    per = min(100, int(query.get("per_page", ["30"])[0]))
    page = int(query.get("page", ["1"])[0])
    chunk = items[(page - 1) * per : page * per]
    link = None
    if page * per < len(items):
        link = f'<{url}?per_page={per}&page={page + 1}>; rel="next"'
    if forced is not None:
        target = f"{url}?per_page={per}&page={page}" if forced == "self" else forced
        link = f'<{target}>; rel="next"'
    return chunk, link


class _Handler(http.server.BaseHTTPRequestHandler):
    fake: FakeGitHub
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # keep-alive answers go out whole, not 40 ms late

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
        for k, v in {**self.fake.current, **(headers or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str) -> None:
        fake = self.fake
        parsed = urlparse(self.path)
        path, query = unquote(parsed.path), parse_qs(parsed.query)
        length = int(self.headers.get("Content-Length") or 0)
        if method == "POST" and path.startswith("/uploads") and length >= fake.max_asset_bytes:
            self.close_connection = True
            self._send(422, {"message": "Validation Failed", "errors": [{"code": "too_large"}]})
            return
        body = self.rfile.read(length) if length else b""
        with fake.lock:
            fake.current = {}
            fake.log.append((method, self.path))
            fake.auth.append((self.path, self.headers.get("Authorization")))
            if not path.startswith("/download/"):
                refusal = fake.limits(method)
                if refusal is not None:
                    fake.refused += 1
                    status, headers, message = refusal
                    self._send(status, {"message": message}, headers)
                    return
            for prefix, count in list(fake.bare_refusals.items()):
                if path.startswith(prefix) and count > 0:
                    fake.bare_refusals[prefix] = count - 1
                    message = "You have exceeded a secondary rate limit. Please wait a few minutes."
                    self._send(fake.bare_status, {"message": message})
                    return
            for prefix, count in list(fake.rate_limited.items()):
                if path.startswith(prefix) and count > 0:
                    fake.rate_limited[prefix] = count - 1
                    reset = str(int(time.time()) + 1)
                    self._send(
                        403,
                        {"message": "API rate limit exceeded"},
                        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset},
                    )
                    return
            if path.startswith(f"/repos/{fake.repo}/issues/comments/"):
                self._send(*edit_comment(fake, method, path.rsplit("/", 1)[-1], body))
                return
            if path.startswith(f"/repos/{fake.repo}/issues/") and path.endswith("/comments"):
                self._send(*issue_comments(fake, method, int(path.split("/")[-2]), query, body))
                return
            self._answer(method, path, query, body)

    def _answer(self, method: str, path: str, query: dict[str, list[str]], body: bytes) -> None:
        fake = self.fake
        repo = f"/repos/{fake.repo}"
        if method == "GET" and path == f"{repo}/releases":
            items, link = _page(fake.releases, query, f"{fake.base}{path}", fake.next_link)
            self._send(200, items, {"Link": link} if link else None)
        elif method == "GET" and path.startswith(f"{repo}/releases/tags/"):
            tag = path.rsplit("/", 1)[-1]
            match = self._published(tag)
            self._send(200, match) if match else self._send(404, {"message": "Not Found"})
        elif method == "POST" and path == f"{repo}/releases":
            fields = json.loads(body)
            if self._published(fields["tag_name"]) is not None:
                self._send(422, _exists("Release", "tag_name"))
            else:
                self._send(
                    201, fake.add_release(fields["tag_name"], draft=bool(fields.get("draft")))
                )
        elif method == "PATCH" and path.startswith(f"{repo}/releases/"):
            self._edit(int(path.rsplit("/", 1)[-1]), json.loads(body))
        elif method == "GET" and path.startswith(f"{repo}/releases/assets/"):
            asset = self._asset(int(path.rsplit("/", 1)[-1]))
            if asset is None or asset["state"] != "uploaded":
                self._send(404, {"message": "Not Found"})
            elif fake.redirect_downloads is not None:
                url = asset["browser_download_url"].removeprefix(fake.base)
                self._send(302, {}, {"Location": fake.redirect_downloads + url})
            else:
                self._send(200, raw=fake.blobs[asset["id"]])
        elif method == "DELETE" and path.startswith(f"{repo}/releases/assets/"):
            aid = int(path.rsplit("/", 1)[-1])
            if any(
                r["immutable"] for r in fake.releases if any(a["id"] == aid for a in r["assets"])
            ):
                self._send(422, {"message": "Cannot delete assets of an immutable release"})
                return
            for r in fake.releases:
                r["assets"] = [a for a in r["assets"] if a["id"] != aid]
            self._send(204, raw=b"")
        elif method == "GET" and path.startswith(f"{repo}/releases/") and path.endswith("/assets"):
            rid = int(path.split("/")[-2])
            release = next(r for r in fake.releases if r["id"] == rid)
            items, link = _page(release["assets"], query, f"{fake.base}{path}", fake.next_link)
            self._send(200, items, {"Link": link} if link else None)
        elif method == "POST" and path.startswith(f"/uploads{repo}/releases/"):
            self._upload(int(path.split("/")[-2]), query, body)
        elif method == "GET" and path.startswith("/download/"):
            _, _, tag, name = path.split("/", 3)
            release = next((r for r in fake.releases if r["tag_name"] == tag), {"assets": []})
            asset = next((a for a in release["assets"] if a["name"] == name), None)
            if asset is None or asset["state"] != "uploaded":
                self._send(404, {"message": "Not Found"})
            else:
                self._send(200, raw=fake.blobs[asset["id"]])
        else:
            self._send(404, {"message": "Not Found"})

    def _published(self, tag: str) -> dict[str, Any] | None:
        """The published release of a tag (GitHub finds no draft by tag)."""
        return next(
            (r for r in self.fake.releases if r["tag_name"] == tag and not r["draft"]), None
        )

    def _edit(self, rid: int, fields: dict[str, Any]) -> None:
        """PATCH a release: a new tag or name, and draft=false publishes it."""
        release = next((r for r in self.fake.releases if r["id"] == rid), None)
        if release is None:
            self._send(404, {"message": "Not Found"})
            return
        tag = fields.get("tag_name", release["tag_name"])
        publishing = release["draft"] and fields.get("draft") is False
        taken = self._published(tag)
        if (publishing or not release["draft"]) and taken not in (None, release):
            self._send(422, _exists("Release", "tag_name"))
            return
        release["tag_name"] = tag
        release["name"] = fields.get("name", release["name"])
        if publishing:
            release["draft"] = False
            release["immutable"] = self.fake.immutable_releases
        self._send(200, release)

    def _asset(self, aid: int) -> dict[str, Any] | None:
        return next((a for r in self.fake.releases for a in r["assets"] if a["id"] == aid), None)

    def _upload(self, rid: int, query: dict[str, list[str]], body: bytes) -> None:
        fake = self.fake
        release = next(r for r in fake.releases if r["id"] == rid)
        name = query["name"][0]
        label = query.get("label", [None])[0]
        if release["immutable"]:
            self._send(422, {"message": "Cannot upload assets to an immutable release."})
        elif any(a["name"] == name for a in release["assets"]):
            self._send(422, _exists("ReleaseAsset", "name"))
        elif len(release["assets"]) >= fake.max_assets:
            self._send(422, {"message": "Validation Failed", "errors": [{"code": "too_many"}]})
        elif name in fake.break_uploads:
            fake.break_uploads.discard(name)
            fake.add_asset(release, name, body[: len(body) // 2], label=label, state="starter")
            self.close_connection = True  # the connection drops: no answer at all
        else:
            self._send(201, fake.add_asset(release, name, body, label=label))

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_DELETE(self) -> None:
        self._route("DELETE")

    def do_PATCH(self) -> None:
        self._route("PATCH")


def _exists(resource: str, name: str) -> dict[str, Any]:
    errors = [{"resource": resource, "code": "already_exists", "field": name}]
    return {"message": "Validation Failed", "errors": errors}


@contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve `handler` on 127.0.0.1 in a thread for the block; yield its URL (no trailing /)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def fake_github(fake: FakeGitHub | None = None) -> Iterator[FakeGitHub]:
    fake = fake or FakeGitHub()
    with serving(type("Handler", (_Handler,), {"fake": fake})) as base:
        fake.base = base
        yield fake
