"""The torch watcher's pure parts: which index files count, how torch.yaml moves forward, the
index page parsers, and the pull request call."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from tests.roots import REPO
from wheelfarm.core.simple import parse_html, parse_json
from wheelfarm.github.client import GitHubClient
from wheelfarm.github.pulls import open_or_update
from wheelfarm.matrix.watch import observe, propose

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
