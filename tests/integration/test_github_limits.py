"""The GitHub client and the publisher against hostile or limited servers on 127.0.0.1: a `next`
link to another host or to itself, an asset redirect, an API that answers for every tag, a
server that drips bytes or sends 1.5 GB, immutable releases and drafts, bare 403s, several
publishers sharing one token's hour, and `publish`'s exit code when wheels are left or missing
(issues 22 and 23). Every server here is bounded in what it sends and lives for one test."""

from __future__ import annotations

import http.server
import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, suppress
from pathlib import Path
from typing import Any

import pytest

from ghsim.fakegithub import FakeGitHub, fake_github, serving
from ghsim.synthetic import farm_wheel
from tests.integration.test_github import make_wheel
from tests.roots import REPO
from wheelfarm.core.errors import NetworkError
from wheelfarm.github.client import GitHubClient
from wheelfarm.github.publish import Publisher, publish
from wheelfarm.github.releases import ReleasesSource
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

from .conftest import wheelfarm

pytestmark = pytest.mark.integration
VERSION = "1.0+cu130torch2.14"


@pytest.fixture(autouse=True)
def _fast_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """GitHub's hour in 3.6 s, for the fake and the client alike."""
    monkeypatch.setenv("WHEELFARM_GITHUB_TIME_SCALE", "1000")


def client_for(gh: FakeGitHub, **kwargs: Any) -> GitHubClient:
    return GitHubClient(gh.repo, api=gh.base, uploads=f"{gh.base}/uploads", token="t", **kwargs)


Answer = Callable[[http.server.BaseHTTPRequestHandler], None]


def dripping(content_type: str) -> Answer:
    """An answer that promises 400 bytes of `content_type` and sends one every 0.5 s (20 s at
    most, whoever listens): each read is quick, so only an overall deadline stops a reader."""

    def drip(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", "400")
        handler.end_headers()
        for _ in range(40):
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.5)

    return drip


def serve(answer: Answer) -> AbstractContextManager[str]:
    """A one-off server on 127.0.0.1 whose every GET is `answer(handler)`; its base URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            with suppress(BrokenPipeError, ConnectionResetError):  # the client hung up
                answer(self)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    return serving(Handler)


def send_json(handler: http.server.BaseHTTPRequestHandler, body: object) -> None:
    data = json.dumps(body).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


# --- the token stays on GitHub -----------------------------------------------------------------
def test_a_next_link_to_another_host_gets_no_request_and_no_token() -> None:
    with fake_github() as evil, fake_github() as gh:
        gh.add_release("demo-pkg-v1.0")
        gh.next_link = f"{evil.base}/repos/{gh.repo}/releases?per_page=100&page=2"
        with pytest.raises(NetworkError, match="is on another host; not followed"):
            ReleasesSource(client_for(gh)).build_ids()
    assert evil.log == []  # not asked at all, so never handed the token
    assert all(header == "Bearer t" for _, header in gh.auth)


def test_index_github_stops_on_a_next_link_to_itself(tmp_path: Path) -> None:
    """The row that looped 657 times in 30 s: one request, exit 9, one line."""
    with fake_github() as gh:
        gh.add_release("demo-pkg-v1.0")
        gh.next_link = "self"
        started = time.monotonic()
        result = wheelfarm("index", "--github", gh.repo, "--api", gh.base, "--out",
                           tmp_path / "site", check=False, env={**os.environ, "GITHUB_TOKEN": "t"})  # fmt: skip
        asked = len(gh.log)
    assert result.returncode == 9, result.stderr
    assert "points back to a page already read" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert asked <= 3 and time.monotonic() - started < 30  # the releases page, one release's assets
    assert not (tmp_path / "site").exists()


def test_an_asset_download_follows_its_redirect_without_the_token() -> None:
    """As api.github.com does, the fake answers an asset download with 302 to another host
    (here `localhost`, a different origin from 127.0.0.1): the bytes come, the token does not."""
    with fake_github() as gh:
        release = gh.add_release("demo-pkg-v1.0")
        asset = gh.add_asset(release, "records-1.json", b'{"x": {}}')
        gh.redirect_downloads = gh.base.replace("127.0.0.1", "localhost")
        client = client_for(gh, asset_hosts=("localhost",))
        assert client.download(asset) == b'{"x": {}}'
    (api_auth,) = [h for p, h in gh.auth if p.startswith(f"/repos/{gh.repo}/releases/assets/")]
    (cdn_auth,) = [h for p, h in gh.auth if p.startswith("/download/")]
    assert api_auth == "Bearer t" and cdn_auth is None


def test_an_api_that_answers_for_every_tag_is_bounded(tmp_path: Path) -> None:
    """`publish` asks for base, base-2, ... until a tag is missing; a server that has every one
    is given MAX_RELEASES of them and a one-line error, not an endless walk."""
    asked = []

    def every_tag(handler: http.server.BaseHTTPRequestHandler) -> None:
        asked.append(handler.path)
        if len(asked) > 4 * 64:  # past any bound: a missing tag, so an unbounded walk fails
            handler.send_error(404)
        elif "/releases/tags/" in handler.path:
            tag = handler.path.rsplit("/", 1)[-1]
            send_json(handler, {"id": len(asked), "tag_name": tag, "draft": False})
        else:
            send_json(handler, [])

    wheel = make_wheel(tmp_path, "demo-pkg", VERSION)
    with serve(every_tag) as base:
        client = GitHubClient("octo/farm", api=base, uploads=f"{base}/uploads", token="t")
        with pytest.raises(NetworkError, match="64 releases of one version already exist"):
            publish([wheel], Publisher(client))
    assert len(asked) <= 2 * 64


# --- bounded reading ---------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["index", "publish"])
def test_a_server_dripping_one_byte_at_a_time_is_cut_at_the_timeout(
    tmp_path: Path, command: str
) -> None:
    """A byte every 0.5 s (each read is quick, so the per-request timeout never fires): the
    command's --timeout stops it, exit 9, naming the option. publish, which asks for its
    release first, stops the same way, with nothing uploaded."""

    drip = dripping("application/json")
    if command == "publish":
        _farm_wheels(tmp_path / "dist", 1)
    with serve(drip) as base:
        args = {
            "index": ("--github", "octo/farm", "--api", base, "--out", tmp_path / "site"),
            "publish": (tmp_path / "dist", "--repo", "octo/farm", "--api", base,
                        "--uploads", f"{base}/uploads"),
        }[command]  # fmt: skip
        started = time.monotonic()
        result = wheelfarm(command, *args, "--timeout", "3", check=False,
                           env={**os.environ, "GITHUB_TOKEN": "t"})  # fmt: skip
        took = time.monotonic() - started
    assert result.returncode == 9, result.stderr
    assert "overall time limit (--timeout 3s)" in result.stderr
    assert "Traceback" not in result.stderr
    assert took < 12


def test_a_body_of_one_and_a_half_gigabytes_is_refused_at_the_cap() -> None:
    def huge(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(1536 << 20))
        handler.end_headers()
        chunk = b" " * (1 << 20)
        for _ in range(64):  # 64 MB at most: twice the cap
            handler.wfile.write(chunk)

    with serve(huge) as base:
        client = GitHubClient("octo/farm", api=base, token="t")
        with pytest.raises(
            NetworkError, match=r"releases\?per_page=100: the answer is over 33,554,432 bytes"
        ):
            list(ReleasesSource(client).releases())


# --- drafts and immutable releases --------------------------------------------------------------
def test_with_immutable_releases_a_release_is_filled_as_a_draft_and_published_last(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = [make_wheel(tmp_path, "demo-pkg", VERSION, py) for py in ("cp311", "cp312")]
    later = make_wheel(tmp_path, "demo-pkg", VERSION, "cp313")
    with fake_github(FakeGitHub(immutable_releases=True)) as gh:
        pub = Publisher(client_for(gh))
        report = publish(first, pub)
        (release,) = gh.releases
        assert release["draft"] is False and release["immutable"] is True
        assert {a["name"] for a in release["assets"]} >= {w.name for w in first}
        assert report.releases == {"demo-pkg-v1.0"} and not report.left
        again = publish([*first, later], pub)  # a new wheel of that version, later
        refusals = [p for m, p in gh.log if m == "POST" and p.startswith("/uploads")]
    assert {w.name for w in first} <= set(again.skipped)
    assert again.releases == {"demo-pkg-v1.0-2"} and not again.left
    assert [(r["tag_name"], r["draft"], r["immutable"]) for r in gh.releases] == [
        ("demo-pkg-v1.0", False, True),
        ("demo-pkg-v1.0-2", False, True),
    ]
    assert "release demo-pkg-v1.0 is immutable" in caplog.text
    assert len(refusals) == 2 + 1 + 2 + 1  # wheels, .metadata and records: no upload refused


def test_a_draft_whose_tag_another_job_published_meanwhile_takes_the_next_tag(
    tmp_path: Path,
) -> None:
    wheel = make_wheel(tmp_path, "demo-pkg", VERSION)

    class Raced(Publisher):
        def finish(self, release: dict[str, Any], free_tags: Iterable[str]) -> dict[str, Any]:
            gh.add_release(release["tag_name"])  # the other job, a moment ahead
            return super().finish(release, free_tags)

    with fake_github() as gh:
        report = publish([wheel], Raced(client_for(gh)))
    assert report.releases == {"demo-pkg-v1.0-2"}
    mine = next(r for r in gh.releases if r["tag_name"] == "demo-pkg-v1.0-2")
    assert mine["draft"] is False and wheel.name in {a["name"] for a in mine["assets"]}


# --- rate limits ---------------------------------------------------------------------------------
def test_a_bare_403_on_an_upload_is_waited_out(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "demo-pkg", VERSION)
    slept: list[float] = []
    with fake_github(FakeGitHub(bare_refusals={"/uploads": 1})) as gh:
        report = publish([wheel], Publisher(client_for(gh, sleep=slept.append)))
    assert wheel.name in report.uploaded
    assert 0.06 in slept  # GitHub's minute, on the scaled clock


def test_publishers_sharing_one_token_pace_from_its_headers(tmp_path: Path) -> None:
    """Three jobs at once against a 30-request hour: they slow down together as the shared
    X-RateLimit-Remaining falls, and none is refused."""
    jobs = []
    for j in range(3):
        folder = tmp_path / f"job{j}"
        folder.mkdir()
        pys = ("cp310", "cp311", "cp312", "cp313")
        jobs.append([make_wheel(folder, f"pkg-{j}", VERSION, py) for py in pys])
    reports: list[Any] = [None] * 3
    with fake_github(FakeGitHub(primary_limit=30)) as gh:

        def run(j: int) -> None:
            reports[j] = publish(jobs[j], Publisher(client_for(gh)))

        threads = [threading.Thread(target=run, args=(j,)) for j in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        asked = len(gh.log)
    assert all(r is not None and not r.left and len(r.uploaded) == 8 for r in reports)
    assert gh.refused == 0 and asked > 30  # it took more than one hour's budget, unrefused


# --- publish's exit code -------------------------------------------------------------------------
def _farm_wheels(dest: Path, count: int) -> list[Any]:
    """`count` planned builds of the demo package and the synthetic wheels they promise."""
    matrix = load_matrix(REPO)
    builds = [b for b in expand(matrix).builds if b.package == "wheelfarm-demo"][:count]
    dest.mkdir()
    for b in builds:
        farm_wheel(matrix, b, dest)
    return builds


def test_publish_exits_8_when_its_budget_runs_out_naming_what_is_left(tmp_path: Path) -> None:
    _farm_wheels(tmp_path / "dist", 4)
    with fake_github(FakeGitHub(primary_limit=6)) as gh:
        result = wheelfarm("publish", tmp_path / "dist", "--repo", gh.repo, "--api", gh.base,
                           "--uploads", f"{gh.base}/uploads", "--deadline-minutes", "16",
                           check=False, env={**os.environ, "GITHUB_TOKEN": "t"})  # fmt: skip
    assert result.returncode == 8, result.stdout + result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert "wheels published and" in line and "left" in line and "re-run the failed jobs" in line


def test_publish_expect_names_planned_builds_with_no_wheel(tmp_path: Path) -> None:
    """The shard planned three builds and two wheels arrived: exit 8 naming the third. Once
    the third is published (its job rerun), the same publish exits 0."""
    builds = _farm_wheels(tmp_path / "all", 3)
    dist = tmp_path / "dist"
    dist.mkdir()
    for wheel in sorted((tmp_path / "all").glob("*.whl"))[:2]:
        for f in (wheel, wheel.with_name(wheel.name + ".build.json")):
            (dist / f.name).write_bytes(f.read_bytes())
    shard = tmp_path / "shard.json"
    shard.write_text(
        json.dumps({"name": "linux_x86_64-1", "include": [{"id": b.id} for b in builds]})
    )
    env = {**os.environ, "GITHUB_TOKEN": "t"}
    with fake_github() as gh:
        args = (
            "--repo",
            gh.repo,
            "--api",
            gh.base,
            "--uploads",
            f"{gh.base}/uploads",
            "--expect",
            shard,
        )
        missing = wheelfarm("publish", dist, *args, check=False, env=env)
        wheelfarm("publish", tmp_path / "all", *args[:-2], env=env)  # the rerun job's wheel
        complete = wheelfarm("publish", dist, *args, check=False, env=env)
    built = {b.id for b in builds}
    here = {line for line in built if line in missing.stderr}
    assert missing.returncode == 8, missing.stderr
    assert "1 planned build(s) have no wheel here and are not published" in missing.stderr
    assert len(here) == 1
    assert complete.returncode == 0, complete.stderr


def test_publish_expect_refuses_a_file_that_is_no_shard(tmp_path: Path) -> None:
    _farm_wheels(tmp_path / "dist", 1)
    shard = tmp_path / "shard.json"
    shard.write_text('{"include": [{"cuda": "cu130"}]}')
    result = wheelfarm("publish", tmp_path / "dist", "--repo", "octo/farm", "--api",
                       "http://127.0.0.1:9", "--expect", shard, check=False)  # fmt: skip
    assert result.returncode == 2 and "not a shard of the plan" in result.stderr


def test_publish_refuses_a_wheel_its_batch_did_not_plan_and_uploads_nothing(
    tmp_path: Path,
) -> None:
    """Issue 36: build code writes the wheelhouse that becomes dist/. A planned build of
    another batch beside this batch's wheel: exit 8 naming it, and no request reaches GitHub."""
    planned, _ = _farm_wheels(tmp_path / "dist", 2)
    shard = tmp_path / "shard.json"
    shard.write_text(json.dumps({"name": "linux_x86_64-1", "include": [{"id": planned.id}]}))
    with fake_github() as gh:
        result = wheelfarm("publish", tmp_path / "dist", "--repo", gh.repo, "--api", gh.base,
                           "--uploads", f"{gh.base}/uploads", "--expect", shard, check=False,
                           env={**os.environ, "GITHUB_TOKEN": "t"})  # fmt: skip
    assert result.returncode == 8, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert "1 wheel(s) here are not this batch's planned builds" in line
    assert "(not planned)" in line and "Nothing was uploaded" in line
    assert gh.log == []
