"""Tests of what wheelfarm_install_input does (filed by module: tests/README.md)."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import re
import threading
import time
import urllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.helpers.install import SHA, _helper, entry, machine
from tests.unit.helpers.strategies import SOME, _maybe, _outcome
from tests.unit.helpers.wheels import NAME
from tests.unit.test_wheelfarm_install import run_install_helper as run
from wheelfarm import doctor
from wheelfarm.core.errors import SiteError
from wheelfarm.scripts import wheelfarm_install as helper


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>not json</html>", "is not a wheelfarm packages.json (JSONDecodeError: Expecting value"),
        (b'{"wheels": [{"name": "demo"}]}', "is not a wheelfarm packages.json (KeyError: 'version')"),
        (b'{"wheels": [{"name": 1}]}', "is not a wheelfarm packages.json (TypeError: {'name': 1})"),
        (b'{"wheels": "none"}', "is not a wheelfarm packages.json (TypeError"),
        (b"\xff\xfe\xfa", "is not a wheelfarm packages.json (UnicodeDecodeError"),
    ],
    ids=["html", "missing key", "not a string", "wrong type", "bad utf-8"],
)  # fmt: skip
def test_install_helper_garbled_index_is_one_line_exit_3(
    body: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "packages.json").write_bytes(body)
    helper = _helper()
    code = helper.main(["demo", "--index", tmp_path.as_uri(), "--dry-run"])
    err = capsys.readouterr().err
    assert code == helper.UNREADABLE_INDEX == 3
    assert err.count("\n") == 1
    assert err.startswith(f"install.py: error: {tmp_path.as_uri()}/packages.json {message}")


def test_install_helper_unreadable_index_is_one_line_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    helper = _helper()
    code = helper.main(["demo", "--index", (tmp_path / "nowhere").as_uri()])
    err = capsys.readouterr().err
    assert code == 3
    assert err.count("\n") == 1
    assert "cannot read file://" in err
    assert "check --index (the farm's site root)" in err


def test_install_helper_reads_a_good_index(tmp_path: Path) -> None:
    wheel = {"name": "demo", "version": "1.0+cu130torch2.14", "public_version": "1.0",
             "filename": NAME, "url": f"https://example.org/{NAME}", "sha256": "0" * 64,
             "covers": [{"cuda": "cu130", "torch": "2.14", "python": "3.12",
                         "platform": "linux_x86_64"}]}  # fmt: skip
    (tmp_path / "packages.json").write_text(json.dumps({"wheels": [wheel]}))
    assert _helper().read_index(tmp_path.as_uri() + "/") == [wheel]


GPU = "9.0, 580.95.05"


SM90 = {"archs": {"sass": ["sm_90"], "ptx": []}}


MODES = [["--dry-run"], ["--print-requirement", "hash"], ["--print-requirement", "url"]]


def _redirect(target: str) -> urllib.request.Request | None:
    handler = helper._redirect_handler()
    request = urllib.request.Request("https://o.github.io/r/packages.json")
    return handler.redirect_request(request, None, 302, "Found", {}, target)


def _index_hostile_install(tmp_path: Path, body: bytes) -> str:
    (tmp_path / "packages.json").write_bytes(body)
    return tmp_path.as_uri() + "/"


class _Dripping:
    """An opener whose body never finishes: each read waits, as a byte-every-10-s server."""

    def __init__(self, *_: object) -> None:
        self.stop = threading.Event()

    def open(self, *_: object, **__: object) -> contextlib.nullcontext[_Dripping]:
        return contextlib.nullcontext(self)

    def read(self, *_: object) -> bytes:
        self.stop.wait(30)
        return b""


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


@pytest.mark.parametrize("opener", [b"[", b'{"a":'], ids=["arrays", "objects"])
def test_json_nested_100k_deep_is_one_line(
    opener: bytes, tmp_path: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    closer = b"]" if opener == b"[" else b"}"
    deep = b'{"wheels": ' + opener * 100_000 + b"1" + closer * 100_000 + b"}"
    args = machine(tmp_path, monkeypatch, [], GPU)
    _index_hostile_install(tmp_path, deep)
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


def _index_json() -> st.SearchStrategy[bytes]:
    cover = st.fixed_dictionaries(
        {
            k: _maybe(st.just(v))
            for k, v in {
                "cuda": "cu130",
                "torch": "2.14",
                "python": "3.12",
                "platform": "linux_x86_64",
            }.items()
        }
    )
    wheel = st.fixed_dictionaries(
        {
            "name": _maybe(st.just("demo")),
            "version": _maybe(st.just("1.0+cu130")),
            "public_version": _maybe(st.just("1.0")),
            "filename": _maybe(st.just(NAME)),
            "covers": _maybe(st.lists(cover, max_size=2)),
        }
    )
    return st.one_of(
        st.binary(max_size=60),
        st.fixed_dictionaries({"wheels": _maybe(st.lists(wheel, max_size=3))}).map(lambda v: json.dumps(v).encode()),
    )  # fmt: skip


@pytest.fixture(scope="module")
def helper_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    return _helper(), tmp_path_factory.mktemp("index")


@SOME
@given(body=_index_json())
def test_install_helper_reads_an_index_or_says_why_not(
    helper_index: tuple[Any, Path], body: bytes
) -> None:
    helper, folder = helper_index
    (folder / "packages.json").write_bytes(body)
    machine = {"cuda": "cu130", "torch": "2.14", "python": "3.12", "platform": "linux_x86_64"}
    wheels = _outcome(lambda: helper.read_index(folder.as_uri() + "/"), helper.HelperError)
    if isinstance(wheels, helper.HelperError):
        assert wheels.code == helper.UNREADABLE_INDEX
    else:  # whatever read_index lets through, choose can read
        _outcome(lambda: helper.choose(wheels, "demo", None, machine))


@pytest.mark.parametrize("mode", MODES, ids=["install", "hash", "url"])
@pytest.mark.parametrize(
    "filename",
    [
        "demo-1.0+cu130torch2.14-cp312-cp312-linux_x86_64\x1b[2K\rok.whl",
        "demo-1.0+cu130torch2.14-cp312-cp312-linux\n# verified by the farm.whl",
        "demo-1.0+cu130torch2.14-cp312-cp312-$(touch PWNED);x.whl",
    ],
    ids=["escape", "newline", "shell"],
)
def test_a_file_name_that_is_no_wheel_name_is_refused_unprinted(
    filename: str, mode: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """Issue 49 "also try": a hostile packages.json's file name reached the terminal as it was
    (an escape sequence or a forged line); only a wheel name's characters pass."""
    args = machine(tmp_path, monkeypatch, [entry(filename=filename, **SM90)], GPU)
    code, out, err = run(helper, capsys, "demo", *args, *mode)
    assert (code, out) == (helper.UNREADABLE_INDEX, "")
    assert err.count("\n") == 1 and "\x1b" not in err
    assert "is not a wheel file name; the index is corrupt or not the farm's" in err


def _cells(*cells: tuple[str, str, str]) -> dict[str, Any]:
    """`covers` of (cuda, torch, python) cells on linux_x86_64."""
    return {"covers": [{"cuda": c, "torch": t, "python": p, "platform": "linux_x86_64"}
                       for c, t, p in cells]}  # fmt: skip


@pytest.mark.parametrize(
    ("cells", "pin", "says"),
    [
        # the user's (CUDA, torch) pair is listed, their Python is not: Python is named
        ([("cu130", "2.14", "3.11"), ("cu130", "2.14", "3.13"), ("cu130", "2.13", "3.12")], None,
         "the mismatch is python; for Python 3.12 on linux_x86_64 it has cu130/torch2.13"),
        ([("cu126", "2.14", "3.12"), ("cu132", "2.14", "3.12")], None,
         "the mismatch is cuda; for Python 3.12 on linux_x86_64 it has cu126/torch2.14, cu132/torch2.14"),
        ([("cu126", "2.13", "3.11")], None,
         "the mismatch is cuda and torch and python; for Python 3.12 on linux_x86_64 it has none"),
        ([("cu130", "2.14", "3.12")], "2.0", "it has demo 1.0 only"),
    ],
    ids=["python", "cuda", "three axes", "version"],
)  # fmt: skip
def test_no_fitting_wheel_names_the_axis_and_what_the_index_has_for_the_users_python(
    cells: list[tuple[str, str, str]],
    pin: str | None,
    says: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = machine(tmp_path, monkeypatch, [entry(**_cells(*cells))], None)
    code, out, err = run(_helper(), capsys, "demo" + (f"=={pin}" if pin else ""), *args)
    cell = "cuda cu130, torch 2.14, python 3.12, platform linux_x86_64"
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err == f"no demo{'==' + pin if pin else ''} wheel for {cell}: {says}\n"


def test_a_package_the_index_lacks_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args = machine(tmp_path, monkeypatch, [entry()], None)
    code, _, err = run(_helper(), capsys, "vllm", *args)
    assert code == 1 and err.endswith(": it has no vllm\n")
