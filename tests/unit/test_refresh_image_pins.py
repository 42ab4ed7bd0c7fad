"""scripts/refresh_image_pins.py offline: it finds the pinned containers in farm.yaml, moves each
to its repository's newest dated tag and that tag's digest, and rewrites nothing else; the
registry's anonymous token dance is answered from a challenge; a digest or tag list of no shape
is one line and farm.yaml is left as it was. (No registry is reachable here.)"""

from __future__ import annotations

import importlib
import io
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests

from tests.roots import REPO
from wheelfarm.core.errors import NetworkError


def _load() -> ModuleType:
    path = REPO.path / "scripts" / "refresh_image_pins.py"
    spec = importlib.util.spec_from_file_location("refresh_image_pins", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


pins = _load()


X86 = "quay.io/pypa/manylinux_2_28_x86_64"


OLD = "sha256:" + "1" * 64


NEW = "sha256:" + "2" * 64


FARM = f"""\
# pinned images
platforms:
  linux_x86_64:
    runner: ubuntu-24.04
    container: {X86}:2026.05.07-2@{OLD}   # keep this comment
  linux_aarch64:
    container: quay.io/pypa/manylinux_2_28_aarch64:2026.05.07-2@{OLD}
  win_amd64:
    container: ""
"""


def _registry(headers: dict[str, str], body: bytes = b"") -> Any:
    """A Registry whose every request is answered with `headers` and `body`."""

    class Session:
        def request(self, method: str, url: str, **_: object) -> requests.Response:
            response = requests.Response()
            response.status_code, response.url = 200, url
            response.headers.update(headers)
            response.raw = io.BytesIO(body)
            return response

    return pins.Registry(Session())  # type: ignore[arg-type]


def test_the_shipped_farm_yaml_has_both_linux_pins() -> None:
    found = list(pins.pins((REPO.matrix / "farm.yaml").read_text()))
    assert sorted(p.repo for p in found) == [
        "quay.io/pypa/manylinux_2_28_aarch64",
        "quay.io/pypa/manylinux_2_28_x86_64",
    ]
    assert all(p.digest.startswith("sha256:") and len(p.digest) == 71 for p in found)


def test_newest_dated_tag_wins_and_an_undated_tag_stays() -> None:
    tags = ["latest", "2026.05.07-2", "2026.09.30-1", "2026.09.30-10", "2025.12.31-9"]
    assert pins.newest_tag("2026.05.07-2", tags) == "2026.09.30-10"
    assert pins.newest_tag("latest", tags) == "latest"
    assert pins.newest_tag("2026.05.07-2", ["latest"]) == "2026.05.07-2"


def test_refresh_moves_each_pin_and_keeps_everything_else() -> None:
    asked: list[tuple[str, str]] = []

    def digest(repo: str, tag: str) -> str:
        asked.append((repo, tag))
        return NEW if repo == X86 else OLD

    def tags(repo: str) -> list[str]:
        return ["2026.05.07-2", "2026.09.30-1"] if repo == X86 else ["2026.05.07-2"]

    text, notes = pins.refresh(FARM, tags, digest)
    assert text == FARM.replace(f"{X86}:2026.05.07-2@{OLD}", f"{X86}:2026.09.30-1@{NEW}")
    assert "# keep this comment" in text and 'container: ""' in text
    assert notes == [f"{X86}:2026.05.07-2@{OLD} -> {X86}:2026.09.30-1@{NEW}"]
    assert sorted(asked) == [
        ("quay.io/pypa/manylinux_2_28_aarch64", "2026.05.07-2"),
        (X86, "2026.09.30-1"),
    ]
    assert pins.refresh(text, tags, digest)[1] == []  # refreshed already: nothing moves


def test_registry_url_and_token_challenge(monkeypatch: pytest.MonkeyPatch) -> None:
    assert pins.registry_url(X86) == ("https://quay.io", "pypa/manylinux_2_28_x86_64")
    seen: dict[str, Any] = {}

    class Answer:
        content = b'{"token": "t0k"}'

    def request(session: object, method: str, url: str, **kwargs: Any) -> Answer:
        seen.update(method=method, url=url, **kwargs)
        return Answer()

    monkeypatch.setattr(pins, "request", request)
    challenge = 'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/alpine:pull"'
    assert pins._token(object(), challenge) == "t0k"
    assert seen == {
        "method": "GET",
        "url": "https://auth.docker.io/token",
        "params": {"service": "registry.docker.io", "scope": "repository:library/alpine:pull"},
        "deadline": None,
    }


@pytest.mark.parametrize(
    "digest",
    ["sha256:" + "2" * 63, "SHA256:" + "2" * 64, f"{NEW}\n    options: --privileged", "md5:00", ""],
)
def test_a_digest_not_of_a_pins_shape_is_refused_before_it_is_written(
    digest: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """The registry's Docker-Content-Digest goes into farm.yaml (and from there into every
    job's `container:`): only `sha256:` and 64 lowercase hex digits is taken."""
    with pytest.raises(NetworkError, match="is not sha256:<64 hex>"):
        _registry({"Docker-Content-Digest": digest}).digest(X86, "2026.09.30-1")
    farm = tmp_path / "farm.yaml"
    farm.write_text(FARM)
    registry = _registry({"Docker-Content-Digest": digest}, b'{"tags": ["2026.09.30-1"]}')
    monkeypatch.setattr(pins, "Registry", lambda session, deadline: registry)
    assert pins.main(["--farm", str(farm)]) == NetworkError.exit_code
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("refresh_image_pins: error: HEAD https://quay.io/v2/")
    assert line.endswith(f"; {farm} is unchanged")
    assert farm.read_text() == FARM


@pytest.mark.parametrize(
    "body", [b"[" * 100_000 + b"]" * 100_000, b'{"tags": [1]}', b'{"tags": "x"}', b"not json"]
)
def test_a_tag_list_of_no_shape_is_one_network_error(body: bytes) -> None:
    with pytest.raises(NetworkError, match=r"GET https://quay\.io/v2/.*/tags/list") as caught:
        _registry({}, body).tags(X86)
    assert "\n" not in str(caught.value)
