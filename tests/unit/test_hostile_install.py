"""Issue 23's install-helper and doctor rows, in process (no sockets here:
tests/integration/test_hostile_install.py serves the slow and redirecting servers): a sha256 that
carries options, a version without the farm's label, a redirect to plain http elsewhere, JSON
nested 100k deep, an oversized packages.json (a file, or a body over http), and a read that
outlasts --timeout. Each is one line on stderr with a non-zero exit, and nothing printed to
stdout that a shell or pip would run."""

from __future__ import annotations

import contextlib
import io
import ipaddress
import re
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st

from wheelfarm import doctor
from wheelfarm.core.errors import NetworkError, SiteError
from wheelfarm.scripts import wheelfarm_install as helper

from .test_install_helper import SHA, entry, machine, run

GPU = "9.0, 580.95.05"
SM90 = {"archs": {"sass": ["sm_90"], "ptx": []}}
MODES = [["--dry-run"], ["--print-requirement", "hash"], ["--print-requirement", "url"]]


@pytest.mark.parametrize("mode", MODES, ids=["install", "hash", "url"])
@pytest.mark.parametrize(
    "sha",
    [
        f"{SHA} --hash=sha256:{'0' * 64} --index-url https://evil.example/simple",
        SHA.upper(),
        SHA[:-1],
        "md5:" + "0" * 32,
    ],
    ids=["options", "upper", "short", "md5"],
)
def test_a_sha256_that_is_not_64_lowercase_hex_is_refused(
    sha: str, mode: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    args = machine(tmp_path, monkeypatch, [entry(sha256=sha, **SM90)], GPU)
    code, out, err = run(helper, capsys, "demo", *args, *mode)
    assert (code, out) == (helper.UNREADABLE_INDEX, "")
    assert err.count("\n") == 1
    assert "is not 64 lowercase hex digits; the index is corrupt or not the farm's" in err
    assert "--index-url" not in err  # the value is named, cut short, never passed on whole


@pytest.mark.parametrize(
    ("version", "filename_version"),
    [("1.0", "1.0"), ("1.0", "1.0+cu130torch2.14"), ("1.0+cu130torch2.14", "1.0+cu999torch9.9")],
    ids=["no-label", "label-dropped", "label-differs"],
)
def test_a_version_without_the_farms_label_is_not_pinned(
    version: str,
    filename_version: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
) -> None:
    """`demo==1.0` could be met by PyPI's demo 1.0; only `==1.0+cu130torch2.14` is the farm's."""
    wheel = entry(version=version, **SM90)
    wheel["filename"] = f"demo-{filename_version}-cp312-cp312-linux_x86_64.whl"
    args = machine(tmp_path, monkeypatch, [wheel], GPU)
    code, out, err = run(helper, capsys, "demo", *args, "--dry-run")
    assert (code, out) == (helper.UNREADABLE_INDEX, "")
    assert "so a pin on it could be met by PyPI" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("mode", MODES[:2], ids=["install", "hash"])
def test_every_pin_names_the_full_local_version(
    mode: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    args = machine(tmp_path, monkeypatch, [entry(**SM90)], GPU)
    code, out, _ = run(helper, capsys, "demo==1.0", *args, *mode)
    assert code == 0
    assert "demo==1.0+cu130torch2.14" in out
    assert "demo==1.0 " not in out and not out.rstrip().endswith("demo==1.0")


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("LOCALHOST", True),
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("localhost.evil.example", False),
        ("127.0.0.1.evil.example", False),
        ("evil.example", False),
        ("::2", False),
        (None, False),
    ],
)
def test_loopback_is_read_from_the_parsed_host(host: str | None, loopback: bool) -> None:
    assert helper.is_loopback(host) is loopback


@given(st.text(max_size=40))
def test_loopback_means_localhost_or_a_loopback_address(host: str) -> None:
    try:
        address = ipaddress.ip_address(host).is_loopback
    except ValueError:
        address = False
    assert helper.is_loopback(host) is (host.lower() == "localhost" or address)


@given(st.text(max_size=60) | st.from_regex(r"https?://[a-z0-9.:\[\]]{1,30}/[ -~]{0,20}"))
def test_check_url_accepts_or_gives_one_line(url: str) -> None:
    errors: list[helper.HelperError] = []
    try:
        helper.check_url(url, "--index")
    except helper.HelperError as exc:
        errors.append(exc)
    assert all("\n" not in str(e) and e.code == helper.USAGE for e in errors)


def _redirect(target: str) -> urllib.request.Request | None:
    handler = helper._redirect_handler()
    request = urllib.request.Request("https://o.github.io/r/packages.json")
    return handler.redirect_request(request, None, 302, "Found", {}, target)


@pytest.mark.parametrize(
    "target",
    [
        "http://evil.example/packages.json",
        "http://localhost.evil.example/packages.json",
        "file:///etc/passwd",
        "ftp://127.0.0.1/packages.json",
    ],
)
def test_a_redirect_is_followed_only_to_https_or_loopback(target: str) -> None:
    with pytest.raises(
        helper.HelperError, match=re.escape("the redirect from https://o.github.io")
    ) as raised:
        _redirect(target)
    assert raised.value.code == helper.UNREADABLE_INDEX


@pytest.mark.parametrize("target", ["https://cdn.example/p.json", "http://127.0.0.1:8000/p.json"])
def test_a_redirect_to_https_or_loopback_is_followed(target: str) -> None:
    followed = _redirect(target)
    assert followed is not None
    assert followed.full_url == target


def _index(tmp_path: Path, body: bytes) -> str:
    (tmp_path / "packages.json").write_bytes(body)
    return tmp_path.as_uri() + "/"


@pytest.mark.parametrize("opener", [b"[", b'{"a":'], ids=["arrays", "objects"])
def test_json_nested_100k_deep_is_one_line(
    opener: bytes, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    closer = b"]" if opener == b"[" else b"}"
    deep = b'{"wheels": ' + opener * 100_000 + b"1" + closer * 100_000 + b"}"
    args = machine(tmp_path, monkeypatch, [], GPU)
    _index(tmp_path, deep)
    code, out, err = run(helper, capsys, "demo", *args)
    assert (code, out) == (helper.UNREADABLE_INDEX, "")
    assert "is not a wheelfarm packages.json (RecursionError" in err
    assert err.count("\n") == 1 and len(err) < 400
    with pytest.raises(SiteError, match="nested 100001 deep, more than the 64 allowed"):
        doctor._index_wheels(str(tmp_path) + "/", None)


def test_an_oversized_packages_json_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setattr(helper, "MAX_INDEX_BYTES", 100)
    monkeypatch.setattr(doctor, "MAX_INDEX_BYTES", 100)
    args = machine(tmp_path, monkeypatch, [entry(**SM90)], GPU)
    code, _, err = run(helper, capsys, "demo", *args)
    assert code == helper.UNREADABLE_INDEX
    assert "is larger than 100 bytes" in err
    with pytest.raises(SiteError, match="larger than 100 bytes"):
        doctor._index_wheels(str(tmp_path) + "/", None)


def test_an_oversized_packages_json_over_http_is_cut_at_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """doctor --index reads a server's packages.json through core.http's capped read: a body
    past MAX_INDEX_BYTES is refused as it streams in, not held whole and then parsed."""

    class Session:
        def request(self, method: str, url: str, **_: object) -> requests.Response:
            response = requests.Response()
            response.status_code, response.url = 200, url
            response.raw = io.BytesIO(b" " * 5000)
            return response

    monkeypatch.setattr(doctor, "MAX_INDEX_BYTES", 100)
    monkeypatch.setattr(doctor, "make_session", Session)
    with pytest.raises(NetworkError, match=r"packages\.json: the answer is over 100 bytes"):
        doctor._index_wheels("https://farm.example/", None)


class _Dripping:
    """An opener whose body never finishes: each read waits, as a byte-every-10-s server."""

    def __init__(self, *_: object) -> None:
        self.stop = threading.Event()

    def open(self, *_: object, **__: object) -> contextlib.nullcontext[_Dripping]:
        return contextlib.nullcontext(self)

    def read(self, *_: object) -> bytes:
        self.stop.wait(30)
        return b""


def test_the_index_is_given_up_at_timeout_not_when_the_server_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    dripping = _Dripping()
    monkeypatch.setattr(urllib.request, "build_opener", lambda *_: dripping)
    args = machine(tmp_path, monkeypatch, [entry(**SM90)], GPU)
    start = time.monotonic()
    code, out, err = run(helper, capsys, "demo", *args, "--timeout", "0.5")
    dripping.stop.set()
    assert time.monotonic() - start < 3
    assert (code, out) == (helper.UNREADABLE_INDEX, "")
    assert "within --timeout 0.5s (the server is too slow); retry later or raise --timeout" in err


@pytest.mark.parametrize("value", ["0", "-1", "soon", "1e9"])
def test_timeout_must_be_a_positive_number(value: str, capsys: Any) -> None:
    code, _, err = run(
        helper, capsys, "demo", "--index", "https://o.github.io/r/", "--timeout", value
    )
    assert code == helper.USAGE
    assert f"{value!r} is not a positive number of seconds" in err
