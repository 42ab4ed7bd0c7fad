"""The watcher's pure parts: which index files count, how torch.yaml moves forward, the
index page parsers (with the sha256 they give), a package's newest upstream release (an sdist
on the index, a git tag), how its package file moves forward, and the pull request call."""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from tests.roots import REPO
from wheelfarm.core.simple import IndexFile, parse_html, parse_json
from wheelfarm.github.client import GitHubClient
from wheelfarm.github.pulls import open_or_update
from wheelfarm.matrix.watch import (
    Upstream,
    bump_package,
    newest_sdist,
    newest_tag,
    observe,
    parse_ls_remote,
    propose,
    tag_version,
)

ARCH = {v: {"linux_x86_64", "linux_aarch64", "win_amd64"} for v in ("12.6", "13.0", "13.2")}
TOOLKITS = {"cu126", "cu130", "cu132"}


def test_only_final_cuda_cpython_wheels_of_farm_platforms_count() -> None:
    seen = observe(
        [
            ("torch-2.15.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", False),
            ("torch-2.15.0+cu130-cp313-cp313t-manylinux_2_28_x86_64.whl", False),  # free-threaded
            ("torch-2.15.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl", False),
            ("torch-2.15.0+rocm6.4-cp312-cp312-manylinux_2_28_x86_64.whl", False),
            ("torch-2.15.0-cp312-none-macosx_11_0_arm64.whl", False),
            ("torch-2.16.0.dev20261129+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", False),
            ("torchvision-0.30.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", False),
            ("not a wheel.tar.gz", False),
            ("torch-2.15.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", True),  # yanked
        ]
    )
    assert set(seen) == {"2.15"}
    entry = seen["2.15"]
    assert str(entry.version) == "2.15.0"
    assert entry.builds == {"cu130": {"linux_x86_64"}} and entry.pythons == {"3.12"}
    assert {str(v) for v in entry.yanked} == {"2.15.1"}


def test_a_yanked_current_patch_moves_back() -> None:
    text = (REPO.matrix / "torch.yaml").read_text().replace('"2.14.1"', '"2.14.2"')
    seen = observe(
        [
            ("torch-2.14.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", False),
            ("torch-2.14.2+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", True),
        ]
    )
    proposal = propose(text, seen, arch=ARCH, toolkits=TOOLKITS)
    assert proposal.changes == ["torch 2.14.2 -> 2.14.1 (yanked)"]
    assert '"2.14.1"' in proposal.text and '"2.14.2"' not in proposal.text


def test_nothing_is_removed_and_comments_stay() -> None:
    text = (REPO.matrix / "torch.yaml").read_text()
    seen = observe([("torch-2.14.1+cu130-cp312-cp312-win_amd64.whl", False)])
    proposal = propose(text, seen, arch=ARCH, toolkits=TOOLKITS)
    assert proposal.text == text and not proposal.changed


def test_index_pages_in_both_forms() -> None:
    html = (
        '<a href="/whl/cu130/torch-2.15.0%2Bcu130-cp312-cp312-win_amd64.whl#sha256=00">'
        "torch-2.15.0+cu130-cp312-cp312-win_amd64.whl</a>"
        '<a href="x.whl" data-yanked="">x.whl</a>'
    )
    files = parse_html(html, "https://download.invalid/whl/cu130/torch/")
    assert (
        files[0].url
        == "https://download.invalid/whl/cu130/torch-2.15.0%2Bcu130-cp312-cp312-win_amd64.whl"
    )
    assert [f.yanked for f in files] == [False, True]
    data = {"files": [{"filename": "a.whl", "url": "a.whl", "yanked": "broken"}, "junk"]}
    (one,) = parse_json(data, "https://download.invalid/simple/torch/")
    assert one.yanked and one.url == "https://download.invalid/simple/torch/a.whl"
    with pytest.raises(ValueError, match="'files' list"):
        parse_json({"files": "no"}, "https://download.invalid/")


class Recorder:
    def __init__(self, existing: list[dict[str, Any]]) -> None:
        self.existing, self.calls = existing, []

    def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        self.calls.append((method, url, kwargs.get("json")))
        response = requests.Response()
        response.status_code, response.url = 200, url
        body = (
            self.existing if method == "GET" else {"html_url": "https://pr.invalid/7", "number": 7}
        )
        response._content = json.dumps(body).encode()
        return response


@pytest.mark.parametrize("existing", [[], [{"number": 7}]])
def test_one_pull_request_per_branch(existing: list[dict[str, Any]]) -> None:
    session = Recorder(existing)
    client = GitHubClient("octo/farm", api="https://api.invalid", token="t", session=session)  # type: ignore[arg-type]
    url = open_or_update(client, head="wheelfarm/torch-watch", base="main", title="t", body="b")
    assert url == "https://pr.invalid/7"
    method, target, body = session.calls[-1]
    if existing:
        assert (method, target) == ("PATCH", "https://api.invalid/repos/octo/farm/pulls/7")
    else:
        assert method == "POST" and body["head"] == "wheelfarm/torch-watch"  # type: ignore[index]
    assert "head=octo:wheelfarm/torch-watch" in session.calls[0][1]


SHA_A, SHA_B = "a" * 64, "b" * 64


def _sdist(name: str, sha256: str | None = SHA_A, *, yanked: bool = False) -> IndexFile:
    return IndexFile(name, f"https://files.invalid/{name}", yanked, sha256=sha256)


def test_index_pages_give_each_files_sha256_when_it_is_one() -> None:
    html = (
        '<a href="x-1.0.tar.gz#sha256=' + "A" * 64 + '">x-1.0.tar.gz</a>'
        '<a href="x-1.1.tar.gz#md5=00">x-1.1.tar.gz</a>'
        '<a href="x-1.2.tar.gz#sha256=zz">x-1.2.tar.gz</a>'
    )
    files = parse_html(html, "https://index.invalid/simple/x/")
    assert [f.sha256 for f in files] == ["a" * 64, None, None]
    assert files[0].url == "https://index.invalid/simple/x/x-1.0.tar.gz"
    data = {"files": [
        {"filename": "x-1.0.tar.gz", "url": "x-1.0.tar.gz", "hashes": {"sha256": SHA_B}},
        {"filename": "x-1.1.tar.gz", "url": "x-1.1.tar.gz", "hashes": {"sha256": 5}},
        {"filename": "x-1.2.tar.gz", "url": "x-1.2.tar.gz", "hashes": ["sha256", SHA_B]},
        {"filename": "x-1.3.tar.gz", "url": "x-1.3.tar.gz", "hashes": {"sha256": SHA_B + "0"}},
    ]}  # fmt: skip
    assert [f.sha256 for f in parse_json(data, "https://index.invalid/")] == [SHA_B] + [None] * 3


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)))  # fmt: skip
def test_a_hostile_hashes_field_is_dropped_never_trusted(hashes: object) -> None:
    data = {"files": [{"filename": "x-1.0.tar.gz", "url": "x.tar.gz", "hashes": hashes}]}
    (one,) = parse_json(data, "https://index.invalid/")
    assert one.sha256 is None or re.fullmatch(r"[0-9a-f]{64}", one.sha256)


def test_the_newest_final_sdist_with_a_hash_is_the_upstream() -> None:
    files = [
        _sdist("flash_attn-2.8.3.post2.tar.gz"),
        _sdist("flash_attn-2.8.4.tar.gz", SHA_B),  # the one
        _sdist("flash_attn-2.8.5.tar.gz", yanked=True),
        _sdist("flash_attn-2.8.6.tar.gz", None),  # no hash: the file could not be pinned
        _sdist("flash_attn-2.9.0rc1.tar.gz"),
        _sdist("flash_attn-2.9.0.dev1.tar.gz"),
        _sdist("flash_attn-3.0.0-cp312-cp312-linux_x86_64.whl"),
        _sdist("flash_attn_3-9.0.tar.gz"),  # another project
        _sdist("flash_attn-9.0+evil.tar.gz"),
        _sdist("flash_attn-.tar.gz"),
    ]
    new = newest_sdist(files, "flash-attn")
    assert new == Upstream(Version("2.8.4"), "flash_attn-2.8.4.tar.gz",
                           "https://files.invalid/flash_attn-2.8.4.tar.gz", SHA_B)  # fmt: skip
    assert newest_sdist(files[2:], "flash-attn") is None


@given(st.lists(st.tuples(st.text(max_size=40), st.booleans(), st.none() | st.just(SHA_A))))
def test_any_index_page_gives_an_upstream_it_lists_or_none(
    rows: list[tuple[str, bool, str | None]],
) -> None:
    files = [_sdist(name, sha, yanked=yanked) for name, yanked, sha in rows]
    new = newest_sdist(files, "x")
    assert new is None or any(f.filename == new.name and not f.yanked for f in files)


def test_tags_with_annotated_ones_peeled() -> None:
    commit = "1" * 40
    text = (
        f"{commit}\trefs/tags/v1.0\n"
        f"{'2' * 40}\trefs/tags/v1.1\n{'3' * 40}\trefs/tags/v1.1^{{}}\n"  # annotated
        f"{'4' * 40}\trefs/heads/main\n"
        "garbage\n$(rm -rf /)\trefs/tags/x\n"
    )
    tags = parse_ls_remote(text)
    assert tags == {"v1.0": commit, "v1.1": "3" * 40}
    assert newest_tag(tags, "https://git.invalid/r") == Upstream(
        Version("1.1"), "v1.1", "https://git.invalid/r", "3" * 40
    )
    assert newest_tag({}, "https://git.invalid/r") is None


@pytest.mark.parametrize(
    ("tag", "version"),
    [("v1.2.3", "1.2.3"), ("1.2", "1.2"), ("pkg-1.2.3", "1.2.3"), ("release_2.0", "2.0"),
     ("v2.3.8.post1", "2.3.8.post1"), ("nightly", None), ("v2.0.0rc1", None),
     ("1.2.3+local", None), ("v", None), ("../1.0", None)],
)  # fmt: skip
def test_a_tag_names_a_final_release_or_nothing(tag: str, version: str | None) -> None:
    assert tag_version(tag) == (None if version is None else Version(version))


@given(st.text(max_size=2000))
def test_any_ls_remote_output_parses_to_tags_and_commits(text: str) -> None:
    for tag, commit in parse_ls_remote(text).items():
        assert re.fullmatch(r"[0-9a-f]{40}", commit) and tag and "^" not in tag
        version = tag_version(tag)
        assert version is None or not (version.is_prerelease or version.local)


@pytest.mark.parametrize(
    "path", sorted((REPO.matrix / "packages").glob("*.yaml")), ids=lambda p: p.stem
)
def test_a_bump_rewrites_the_version_and_its_pin_alone(path: Path) -> None:
    """Every shipped package file: its newest version moves, with its sha256 or commit, and
    every other byte (comments, order, a wrapped flow list) stays."""
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    newest = max(data["versions"], key=lambda v: Version(v["version"]))
    source = newest["source"]
    if "path" in source:
        return
    pin = SHA_B if "sdist" in source else "c" * 40
    moved = bump_package(text, newest["version"], Upstream(Version("99.1"), "n", "u", pin))
    old, new = text.splitlines(), moved.splitlines()
    changed = [ln for ln in difflib.ndiff(old, new) if ln[:1] in "+-"]
    assert len(old) == len(new) and 2 <= len(changed) <= 4
    after = yaml.safe_load(moved)
    entry = next(v for v in after["versions"] if v["version"] == "99.1")
    assert entry["source"] == {**source, "sha256" if "sdist" in source else "commit": pin}
    assert [v for v in after["versions"] if v is not entry] == [
        v for v in data["versions"] if v is not newest
    ]


def test_a_bump_quotes_a_plain_value_that_would_read_as_a_number() -> None:
    text = "versions:\n  - version: v1\n    source: {git: https://g.invalid/r, commit: abc}\n"
    moved = bump_package(text, "1", Upstream(Version("2.1"), "v2.1", "u", "1" * 40))
    assert yaml.safe_load(moved)["versions"][0] == {
        "version": "2.1",
        "source": {"git": "https://g.invalid/r", "commit": "1" * 40},
    }
