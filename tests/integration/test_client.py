"""Tests of what client does (filed by module: tests/README.md)."""

from __future__ import annotations

import dataclasses
import http
import os
import time
from pathlib import Path

import pytest

from ghsim.fakegithub import fake_github
from ghsim.synthetic import SAMPLE, sample_record
from tests.integration.conftest import (
    _farm_wheels,
    client_for,
    dripping,
    make_wheel,
    serve,
    wheelfarm,
)
from wheelfarm.core.errors import NetworkError
from wheelfarm.core.record import Archs, path_for
from wheelfarm.github.client import GitHubClient
from wheelfarm.github.publish import Publisher, publish
from wheelfarm.github.releases import ReleasesSource

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("fast_github_clock")]


def test_the_index_reads_listings_only(tmp_path: Path) -> None:
    """With digests and labels no asset is downloaded: pages of 100 assets are all it asks."""
    wheels = [
        make_wheel(tmp_path, f"pkg-{i:03d}", "2.0+cu126torch2.13", payload=str(i).encode())
        for i in range(120)
    ]
    with fake_github() as gh:
        client = GitHubClient(gh.repo, api=gh.base, uploads=f"{gh.base}/uploads", token="t")
        publish(wheels, Publisher(client))
        reader = GitHubClient(gh.repo, api=gh.base, token="t")
        entries = ReleasesSource(reader).entries(None, {})
    assert len(entries) == 120
    assert all(e.requires_python == ">=3.10" and e.metadata_sha256 for e in entries)
    assert reader.requests_made == 2 + 120  # two pages of releases, one asset page each


def test_the_index_lists_archs_from_the_records_asset(tmp_path: Path) -> None:
    """Each publishing run's records-*.json gives its wheels' SASS and PTX: one download per
    release and run; a records asset that is not JSON leaves its wheels listed without archs."""
    wheels = [
        make_wheel(tmp_path, "demo-pkg", "1.0+cu130torch2.14", py) for py in ("cp311", "cp312")
    ]
    for wheel, sass in zip(wheels, (["sm_90", "sm_80"], ["sm_90"]), strict=True):
        record = sample_record(
            target=dataclasses.replace(SAMPLE.target, covers=()),
            archs_found={"x.so": Archs(cubins=tuple(sass), ptx=("sm_90",))},
        )
        path_for(wheel).write_text(record.to_json())
    with fake_github() as gh:
        client = GitHubClient(gh.repo, api=gh.base, uploads=f"{gh.base}/uploads", token="t")
        publish(wheels, Publisher(client))
        reader = GitHubClient(gh.repo, api=gh.base, token="t")
        policy = {"demo-pkg-1.0-cu130torch2.14-cp312-linux_x86_64": frozenset({"sm_80", "sm_90"})}
        entries = {e.filename: e for e in ReleasesSource(reader).entries(None, {}, policy)}
        assert reader.requests_made == 1 + 1 + 1  # releases, assets, one records file
        (release,) = gh.releases
        records = next(a for a in release["assets"] if a["name"].startswith("records-"))
        gh.blobs[records["id"]] = b"not json"
        unread = ReleasesSource(reader).entries(None, {})
    first, second = (entries[w.name] for w in wheels)
    assert (first.sass, first.ptx, first.partial_archs) == (("sm_80", "sm_90"), ("sm_90",), False)
    assert (second.sass, second.partial_archs) == (("sm_90",), True)  # its policy wants sm_80
    assert [(e.sass, e.ptx) for e in unread] == [((), ()), ((), ())]


# --- the token stays on GitHub -----------------------------------------------------------------
def test_a_next_link_to_another_host_gets_no_request_and_no_token() -> None:
    with fake_github() as evil, fake_github() as gh:
        gh.add_release("demo-pkg-v1.0")
        gh.next_link = f"{evil.base}/repos/{gh.repo}/releases?per_page=100&page=2"
        with pytest.raises(NetworkError, match="is on another host; not followed"):
            ReleasesSource(client_for(gh)).build_ids()
    assert evil.log == []  # not asked at all, so never handed the token
    assert all(header == "Bearer t" for _, header in gh.auth)


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
