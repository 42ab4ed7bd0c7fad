"""scripts/pin_toolkit_manifest.py offline: it pins the row of a CUDA tag at the sha256 of the
manifest it fetched (only that row's version and hash move), refuses an answer that is not that
release's manifest, and a refusal is one line with toolkits.yaml left as it was. (NVIDIA is not
reachable here: the fetch is a function answering from memory.)"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.roots import REPO
from wheelfarm.core.errors import NetworkError, UsageError


def _load() -> ModuleType:
    path = REPO.path / "scripts" / "pin_toolkit_manifest.py"
    spec = importlib.util.spec_from_file_location("pin_toolkit_manifest", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


pin = _load()
SHIPPED = (REPO.matrix / "toolkits.yaml").read_text(encoding="utf-8")
MANIFEST = json.dumps({"release_label": "13.2.1", "cuda_nvcc": {}}).encode()
URL = "https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.2.1.json"


def _fetch(body: bytes) -> Any:
    asked: list[str] = []

    def fetch(url: str) -> bytes:
        asked.append(url)
        return body

    fetch.asked = asked  # type: ignore[attr-defined]
    return fetch


def test_a_new_release_moves_only_its_rows_version_and_sha256() -> None:
    fetch = _fetch(MANIFEST)
    text, sha = pin.propose(SHIPPED, "cu132", "13.2.1", fetch)
    assert fetch.asked == [URL] and sha == hashlib.sha256(MANIFEST).hexdigest()
    old = next(line for line in SHIPPED.splitlines() if line.startswith("  cu132:"))
    new = next(line for line in text.splitlines() if line.startswith("  cu132:"))
    assert new == old.replace('"13.2.0"', '"13.2.1"').replace(old.split('"')[3], sha)
    assert text.replace(new, old) == SHIPPED


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            json.dumps({"release_label": "13.2.0"}).encode(),
            "release_label is '13.2.0', not '13.2.1'",
        ),
        (b"<html>moved</html>", "not a manifest"),
        (b"[" * 100_000 + b"]" * 100_000, "not a manifest"),
        (json.dumps(["13.2.1"]).encode(), "release_label is 'None'"),
    ],
    ids=["another release", "html", "deep", "no object"],
)
def test_an_answer_that_is_not_the_releases_manifest_is_refused(body: bytes, problem: str) -> None:
    with pytest.raises(NetworkError, match=problem):
        pin.propose(SHIPPED, "cu132", "13.2.1", _fetch(body))


@pytest.mark.parametrize(
    ("tag", "version", "problem"),
    [
        ("cu132", "13.3.0", "give a CUDA tag and its full release"),
        ("cu132", "13.2", "give a CUDA tag and its full release"),
        ("cu132", '13.2.0"; rm -rf /', "give a CUDA tag and its full release"),
        ("cu1310", "13.10.0", "give a CUDA tag and its full release"),
        ("cu140", "14.0.0", "toolkits.yaml has no row for cu140: add `cu140:"),
    ],
)
def test_a_tag_and_version_that_do_not_fit_fetch_nothing(
    tag: str, version: str, problem: str
) -> None:
    fetch = _fetch(json.dumps({"release_label": version}).encode())
    with pytest.raises(UsageError, match=problem):
        pin.propose(SHIPPED, tag, version, fetch)
    assert fetch.asked == ([] if "has no row" not in problem else fetch.asked)


def test_a_refusal_is_one_line_and_leaves_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    toolkits = tmp_path / "toolkits.yaml"
    toolkits.write_text(SHIPPED, encoding="utf-8")

    def refused(session: object, method: str, url: str, **_: object) -> object:
        msg = f"GET {url}: 404 Not Found"
        raise NetworkError(msg, 404)

    monkeypatch.setattr(pin, "request", refused)
    argv = ["cu132", "13.2.1", "--toolkits", str(toolkits), "--write"]
    assert pin.main(argv) == NetworkError.exit_code
    (line,) = capsys.readouterr().err.splitlines()
    assert line == f"pin_toolkit_manifest: error: GET {URL}: 404 Not Found; {toolkits} is unchanged"
    assert toolkits.read_text(encoding="utf-8") == SHIPPED
