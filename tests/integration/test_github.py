"""GitHub Releases code against a local stand-in for the REST API (tests/fakegithub.py):
GitHub itself cannot be reached here. Wheels are real files built by write_wheel."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ghsim.fakegithub import FakeGitHub, fake_github
from ghsim.synthetic import SAMPLE, sample_record
from tests.roots import REPO
from wheelfarm.core.errors import PublishError
from wheelfarm.core.record import Archs, Timing, path_for
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.github.client import GitHubClient
from wheelfarm.github.publish import Publisher, publish
from wheelfarm.github.releases import ReleasesSource
from wheelfarm.index.site import build_site

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _fast_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """GitHub's hour in 3.6 s, for the fake and the client alike: pacing is tested, not waited."""
    monkeypatch.setenv("WHEELFARM_GITHUB_TIME_SCALE", "1000")


def make_wheel(
    folder: Path, name: str, version: str, py: str = "cp312", payload: bytes = b""
) -> Path:
    """A small but complete wheel (METADATA, WHEEL, RECORD)."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{dist}/__init__.py": b"# " + payload + b"\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Python: >=3.10\n".encode(),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {py}-{py}-manylinux_2_28_x86_64\n".encode(),
    }
    path = folder / f"{dist}-{version}-{py}-{py}-manylinux_2_28_x86_64.whl"
    write_wheel(path, files, info)
    return path


def test_publish_twice_uploads_nothing_the_second_time(tmp_path: Path) -> None:
    wheels = [
        make_wheel(tmp_path, "demo-pkg", "1.0+cu130torch2.14", py) for py in ("cp311", "cp312")
    ]
    with fake_github() as gh:
        pub = Publisher(GitHubClient(gh.repo, api=gh.base, uploads=f"{gh.base}/uploads", token="t"))
        first = publish(wheels, pub)
        assert sorted(first.uploaded) == sorted(
            [w.name for w in wheels] + [f"{w.name}.metadata" for w in wheels]
        )
        assert first.releases == {"demo-pkg-v1.0"}
        uploads_before = sum(1 for m, p in gh.log if m == "POST" and p.startswith("/uploads"))
        second = publish(wheels, pub)
        uploads_after = sum(1 for m, p in gh.log if m == "POST" and p.startswith("/uploads"))
    assert second.uploaded == []
    assert len(second.skipped) == 4
    assert uploads_after == uploads_before
    (release,) = gh.releases
    names = {a["name"] for a in release["assets"]}
    assert "SHA256SUMS" not in names  # every asset carries GitHub's digest instead
    wheel_asset = next(a for a in release["assets"] if a["name"] == wheels[0].name)
    assert wheel_asset["digest"] == "sha256:" + hashlib.sha256(wheels[0].read_bytes()).hexdigest()
    assert wheel_asset["label"] == "Requires-Python >=3.10"


def test_an_identical_rebuild_with_a_new_record_is_already_there(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "demo-pkg", "1.0+cu130torch2.14")

    def write_record(created: str) -> None:
        timing = Timing(created=created, steps_seconds={"compile": 81.0}, ccache={})
        path_for(wheel).write_text(sample_record(timing=timing).to_json())

    write_record("2026-01-01T00:00:00+00:00")
    with fake_github() as gh:
        pub = Publisher(GitHubClient(gh.repo, api=gh.base, uploads=f"{gh.base}/uploads", token="t"))
        publish([wheel], pub)
        write_record("2026-02-01T00:00:00+00:00")  # rebuilt: same bytes, new times
        again = publish([wheel], pub)
        (release,) = gh.releases
        records = [a for a in release["assets"] if a["name"].startswith("records-")]
        (published,) = [json.loads(gh.blobs[a["id"]]) for a in records]
    assert again.uploaded == [] and sorted(again.skipped) == [wheel.name, f"{wheel.name}.metadata"]
    # no times: the same hash
    assert published == {wheel.name: sample_record().published().to_object()}


def test_a_different_asset_with_the_same_name_is_refused(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "demo-pkg", "1.0+cu130torch2.14", payload=b"original")
    with fake_github() as gh:
        pub = Publisher(GitHubClient(gh.repo, api=gh.base, uploads=f"{gh.base}/uploads", token="t"))
        publish([wheel], pub)
        (tmp_path / "rebuilt").mkdir()
        rebuilt = make_wheel(
            tmp_path / "rebuilt", "demo-pkg", "1.0+cu130torch2.14", payload=b"rebuilt"
        )
        other = make_wheel(tmp_path / "rebuilt", "demo-pkg", "1.0+cu130torch2.14", py="cp311")
        with pytest.raises(
            PublishError,
            match=r"already published with different bytes: .* in release 'demo-pkg-v1\.0'.*"
            r"Nothing was uploaded",
        ):
            publish([other, rebuilt], pub)
        assert other.name not in {a["name"] for a in gh.releases[0]["assets"]}
        (release,) = gh.releases
        blob = gh.blobs[next(a["id"] for a in release["assets"] if a["name"] == wheel.name)]
    assert blob == wheel.read_bytes()  # nothing was overwritten


def test_a_full_release_rolls_over(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "demo-pkg", "1.0+cu130torch2.14")
    with fake_github() as gh:
        full = gh.add_release("demo-pkg-v1.0")
        for i in range(999):
            gh.add_asset(full, f"filler-{i}.txt", b"x")
        pub = Publisher(GitHubClient(gh.repo, api=gh.base, uploads=f"{gh.base}/uploads", token="t"))
        report = publish([wheel], pub)
        assert report.releases == {"demo-pkg-v1.0-2"}
        assert len(full["assets"]) <= 1000
        again = publish([wheel], pub)
    assert again.uploaded == []
    assert [r["tag_name"] for r in gh.releases] == ["demo-pkg-v1.0", "demo-pkg-v1.0-2"]


def test_index_reads_three_pages_of_assets_through_a_rate_limit(tmp_path: Path) -> None:
    """105 wheels x (wheel + .metadata) + SHA256SUMS = 211 assets: three pages at per_page=100;
    the first page answers 403 rate-limited once, with a reset time."""
    house = tmp_path / "house"
    house.mkdir()
    wheels = [
        make_wheel(house, "demo-pkg", "1.0+cu130torch2.14", f"cp3{10 + i}", payload=str(i).encode())
        for i in range(4)
    ]
    many = [make_wheel(house, f"pkg-{i:03d}", "2.0+cu126torch2.13") for i in range(105)]
    slept: list[float] = []
    with fake_github() as gh:
        pub = Publisher(GitHubClient(gh.repo, api=gh.base, uploads=f"{gh.base}/uploads", token="t"))
        publish(wheels, pub)
        gh.with_digest = False  # a release from before GitHub added digests: SHA256SUMS instead
        big = gh.add_release("many-v2.0")
        for w in many:
            gh.add_asset(big, w.name, w.read_bytes())
            gh.add_asset(
                big,
                w.name + ".metadata",
                b"Metadata-Version: 2.1\nName: x\nVersion: 2.0\nRequires-Python: >=3.9\n",
            )
        gh.add_asset(
            big,
            "SHA256SUMS",
            "".join(
                f"{hashlib.sha256(w.read_bytes()).hexdigest()}  {w.name}\n" for w in many
            ).encode(),
        )
        gh.rate_limited[f"/repos/{gh.repo}/releases/{big['id']}/assets"] = 1
        source = ReleasesSource(GitHubClient(gh.repo, api=gh.base, token="t", sleep=slept.append))
        entries = source.entries(None, {})
        asset_pages = [p for m, p in gh.log if m == "GET" and "/assets?" in p]
    assert len(entries) == 109
    big_pages = [p for p in asset_pages if f"/releases/{big['id']}/" in p]
    # page 1 twice (403 rate-limited, then retried after the reset), then pages 2 and 3
    pages = [m[1] if (m := re.search(r"[?&]page=(\d+)", p)) else "1" for p in big_pages]
    assert pages == ["1", "1", "2", "3"]
    assert len(slept) == 1 and 0 <= slept[0] <= 2  # honoured X-RateLimit-Reset
    by_name = {e.filename: e for e in entries}
    assert (
        by_name[many[7].name].sha256 == hashlib.sha256(many[7].read_bytes()).hexdigest()
    )  # from SHA256SUMS
    assert by_name[many[7].name].requires_python == ">=3.9"
    assert by_name[wheels[0].name].url.startswith(f"{gh.base}/download/demo-pkg-v1.0/")
    result = build_site(entries, tmp_path / "site", templates=REPO.templates)
    assert result.combos == 2
    page = (tmp_path / "site" / "cu126" / "torch2.13" / "pkg-007" / "index.html").read_text()
    assert "%2Bcu126torch2.13" in page and 'data-core-metadata="sha256=' in page


def test_a_broken_upload_leaves_a_starter_asset_that_the_publisher_clears(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "demo-pkg", "1.0+cu130torch2.14", payload=b"x" * 4096)
    with fake_github(FakeGitHub(break_uploads={wheel.name})) as gh:
        pub = Publisher(GitHubClient(gh.repo, api=gh.base, uploads=f"{gh.base}/uploads", token="t"))
        report = publish([wheel], pub)
        (release,) = gh.releases
        mine = [a for a in release["assets"] if a["name"] == wheel.name]
        deletes = [p for m, p in gh.log if m == "DELETE"]
    assert wheel.name in report.uploaded
    assert len(mine) == 1 and mine[0]["state"] == "uploaded"
    assert gh.blobs[mine[0]["id"]] == wheel.read_bytes()
    assert len(deletes) == 1  # the starter asset, and nothing that was whole


def test_two_runs_creating_one_release_at_once(tmp_path: Path) -> None:
    """The other run's POST won the race: ours gets 422 and uses theirs."""
    wheel = make_wheel(tmp_path, "demo-pkg", "1.0+cu130torch2.14")

    class Late(Publisher):
        looks = 0

        def find(self, tag: str) -> dict[str, Any] | None:
            self.looks += 1
            if self.looks <= 2:  # our looks before the other run created it
                return None
            return super().find(tag)

    with fake_github() as gh:
        gh.add_release("demo-pkg-v1.0")
        pub = Late(GitHubClient(gh.repo, api=gh.base, uploads=f"{gh.base}/uploads", token="t"))
        report = publish([wheel], pub)
    assert report.releases == {"demo-pkg-v1.0"} and len(gh.releases) == 1
    assert ("POST", f"/repos/{gh.repo}/releases") in gh.log


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
