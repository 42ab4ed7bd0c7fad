"""Tests of what watchnet does (filed by module: tests/README.md)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wheelfarm.core.errors import UsageError
from wheelfarm.watchnet import _file_url, _index


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://evil.example/t.whl", "use https"),
        ("https://evil.example/t.whl", "neither the index's"),
        ("http://localhost.evil.example/t.whl", "use https"),
        ("file:///etc/passwd", "use https"),
    ],
)
def test_a_file_url_off_https_or_the_expected_hosts_is_refused(url: str, why: str) -> None:
    assert why in (_file_url(url, "https://pypi.org/simple/torch/") or "")


@pytest.mark.parametrize(
    ("url", "page"),
    [
        ("https://files.pythonhosted.org/packages/t.whl", "https://pypi.org/simple/torch/"),
        ("https://mirror.example/p/t.whl", "https://mirror.example/simple/torch/"),
        ("http://127.0.0.1:8080/p/t.whl", "http://127.0.0.1:8080/simple/torch/"),
    ],
)
def test_file_urls_on_https_from_expected_hosts_are_read(url: str, page: str) -> None:
    assert _file_url(url, page) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/simple/",
        "http://127.1.2.3/simple/",
        "http://[::1]:9000/simple/",
        "http://localhost/simple/",
        "https://pypi.org/simple/",
    ],
)
def test_plain_http_only_on_loopback(url: str) -> None:
    assert _index(url, "--pypi-index").endswith("/")


@pytest.mark.parametrize(
    "url",
    [
        "http://localhost.evil.example/simple/",  # starts like localhost, is not
        "http://127.0.0.1.evil.example/",
        "http://[::1].evil.example/",
        "http://10.0.0.1/simple/",
        "ftp://127.0.0.1/simple/",
        "https:///simple/",
        "file:///etc/",
    ],
)
def test_anything_else_is_refused_naming_the_flag(url: str) -> None:
    with pytest.raises(UsageError, match="--pypi-index"):
        _index(url, "--pypi-index")


@given(
    prefix=st.sampled_from(["localhost", "127.0.0.1", "[::1]", "LocalHost"]),
    label=st.from_regex(r"[a-z0-9-]{1,20}", fullmatch=True),
)
def test_a_host_that_only_starts_like_loopback_is_refused(prefix: str, label: str) -> None:
    """The host is parsed, never matched by prefix: any name after a loopback spelling is
    another host, reachable over the network in plain http."""
    with pytest.raises(UsageError, match="--torch-index"):
        _index(f"http://{prefix}.{label}/whl/", "--torch-index")


@given(address=st.ip_addresses(v=4, network="127.0.0.0/8"), port=st.integers(1, 65535))
def test_every_loopback_address_takes_plain_http(address: object, port: int) -> None:
    assert (
        _index(f"http://{address}:{port}/whl", "--torch-index") == f"http://{address}:{port}/whl/"
    )
