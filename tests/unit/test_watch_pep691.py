"""The PEP 691 side of `wheelfarm watch` (issue 24): the JSON page reader, torch wheel names
from an index that is not trusted, the CUDA a default-variant METADATA pins, two indexes
merged, and the loopback rule for plain http."""

from __future__ import annotations

import io
import re
from unittest import mock

import pytest
import requests
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from tests.roots import REPO
from wheelfarm.core import simple
from wheelfarm.core.errors import NetworkError, UsageError
from wheelfarm.core.label import cuda_tag, cuda_version
from wheelfarm.core.simple import JSON, parse_html, parse_json
from wheelfarm.matrix.watch import (
    Row,
    Seen,
    cuda_pin,
    merge,
    observe,
    observe_rows,
    parse_torch_wheel,
    propose,
)
from wheelfarm.watchnet import _file_url, _index

ARCH = {
    "13.0": {"linux_x86_64", "linux_aarch64", "win_amd64"},
    "13.2": {"linux_x86_64", "linux_aarch64", "win_amd64"},
}
TOOLKITS = {"cu130", "cu132"}
METADATA = (
    "Metadata-Version: 2.1\nName: torch\nVersion: 2.15.0\nRequires-Python: >=3.11\n"
    "Requires-Dist: filelock\n"
    'Requires-Dist: cuda-toolkit[cublas,cudart]==13.2.2; platform_system == "Linux"\n'
    'Requires-Dist: nvidia-nccl-cu13==2.30.7; platform_system == "Linux"\n'
    'Requires-Dist: optree>=0.13.0; extra == "optree"\n'
)


def old_grid() -> str:
    """torch.yaml as it was before 2.15 (its last release is 2.14.1)."""
    text = (REPO.matrix / "torch.yaml").read_text()
    return text[: text.index('  - torch: "2.15.0"')]


def test_a_pep691_page_keeps_what_pep_700_and_658_add_and_drops_wrong_types() -> None:
    data = {
        "files": [
            {
                "filename": "torch-2.15.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                "url": "../../packages/t.whl",
                "upload-time": "2026-10-28T15:17:47Z",
                "requires-python": ">=3.11",
                "size": 539172785,
                "core-metadata": {"sha256": "00"},
                "yanked": False,
            },
            {"filename": "b.whl", "url": "b.whl", "size": True, "upload-time": 7, "core-metadata": "x"},
            {"filename": ["not", "a", "name"], "url": "c.whl"},
            {"filename": "d.whl"},
        ]
    }  # fmt: skip
    first, second = parse_json(data, "https://pypi.invalid/simple/torch/")
    assert first.url == "https://pypi.invalid/packages/t.whl"
    assert (first.upload_time, first.requires_python, first.size, first.core_metadata) == (
        "2026-10-28T15:17:47Z",
        ">=3.11",
        539172785,
        True,
    )
    assert (second.size, second.upload_time, second.core_metadata) == (None, None, False)


def test_a_pep503_page_keeps_requires_python_and_the_metadata_promise() -> None:
    html = (
        '<a href="a.whl" data-requires-python="&gt;=3.11" data-core-metadata="sha256=00">a.whl</a>'
        '<a href="b.whl" data-dist-info-metadata="false">b.whl</a>'
    )
    a, b = parse_html(html, "https://x.invalid/torch/")
    assert (a.requires_python, a.core_metadata, b.core_metadata) == (">=3.11", True, False)


@pytest.mark.parametrize(
    "name",
    [
        "torch-2.12.0+cu130-cp3_12-cp3_12-manylinux_2_28_x86_64.whl",  # issue 23's InvalidVersion
        "torch-2.99.0+evil-cp312-cp312-manylinux_2_28_x86_64.whl",  # a local version, not cuXYZ
        "torch-2.99.0+cu130-cp399-cp399-manylinux_2_28_x86_64.whl",  # no CPython 3.99
        "torch-2.15.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.16.0.dev20261101-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.16.0rc1-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-latest-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.15.0-cp312-cp312-macosx_14_0_arm64.whl",
        "torch-2.15.0-cp312-abi3-manylinux_2_28_x86_64.whl",
        "torch-2.15.0-cp312.cp313-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.15.0.tar.gz",
    ],
)
def test_what_is_not_a_torch_wheel_the_farm_plans(name: str) -> None:
    assert parse_torch_wheel(name, newest_python="3.15") is None


def test_default_labelled_and_free_threaded_wheels() -> None:
    v = Version("2.15.0")
    assert parse_torch_wheel("torch-2.15.0-cp315-cp315-win_amd64.whl") == Row(
        v, None, "3.15", "win_amd64", free_threaded=False
    )
    assert parse_torch_wheel("torch-2.15.0+cu130-cp314-cp314t-manylinux_2_28_aarch64.whl") == Row(
        v, "cu130", "3.14", "linux_aarch64", free_threaded=True
    )
    # one minor past the newest Python the farm knows may be real (a release ahead of the images)
    assert parse_torch_wheel("torch-2.16.0-cp316-cp316-win_amd64.whl", newest_python="3.15")


def test_the_hostile_names_never_reach_the_proposal() -> None:
    files = [
        (f"torch-2.99.0+evil-cp312-cp312-{p}.whl", False)
        for p in ("manylinux_2_28_x86_64", "win_amd64")
    ]
    files += [("torch-2.15.0+cu130-cp399-cp399-win_amd64.whl", False)]
    files += [("torch-2.15.0+cu130-cp3_12-cp3_12-win_amd64.whl", False)]
    files += [("torch-2.15.0+cu130-cp312-cp312-win_amd64.whl", False)]
    proposal = propose(
        old_grid(), observe(files, newest_python="3.15"), arch=ARCH, toolkits=TOOLKITS
    )
    assert "2.99" not in proposal.text and "3.99" not in proposal.text
    assert 'python: ["3.12", "3.12"]' in proposal.text


def test_the_cuda_a_default_wheel_pins_on_each_platform() -> None:
    assert cuda_pin(METADATA, "linux_x86_64") == (
        "cu132",
        'cuda-toolkit[cublas,cudart]==13.2.2; platform_system == "Linux"',
    )
    assert cuda_pin(METADATA, "win_amd64") is None  # the marker says Linux only
    older = 'Requires-Dist: nvidia-cuda-runtime-cu12 (==12.1.105) ; platform_machine == "x86_64"'
    assert cuda_pin(older, "linux_x86_64") == (
        "cu121",
        'nvidia-cuda-runtime-cu12 (==12.1.105) ; platform_machine == "x86_64"',
    )
    assert cuda_pin(older, "linux_aarch64") is None
    assert cuda_pin("Requires-Dist: cuda-toolkit>=13", "linux_x86_64") is None  # not a pin


@given(st.text(max_size=400))
def test_cuda_pin_reads_any_text_without_raising(text: str) -> None:
    why = "has no tag"  # the one ValueError: a pin no tag can write
    try:
        pin = cuda_pin(text, "linux_x86_64")
    except ValueError as exc:
        why, pin = str(exc), None
    assert "has no tag" in why
    assert pin is None or pin[0].startswith("cu")


@given(st.integers(10, 99), st.integers(0, 99), st.integers(0, 999))
def test_a_cuda_tag_reads_back_as_its_version_or_is_refused(
    major: int, minor: int, fix: int
) -> None:
    """Issue 36 row 8: a tag is cu + major + ONE minor digit, so 13.99 and 13.10 have none
    (cu1399 would read back as 139.9); every tag made reads back as the version it came from."""
    version = f"{major}.{minor}.{fix}"
    if minor > 9:
        with pytest.raises(ValueError, match=rf"CUDA {re.escape(version)} has no tag"):
            cuda_tag(version)
    else:
        assert cuda_version(cuda_tag(version)) == Version(f"{major}.{minor}")


def test_a_pin_to_cuda_13_99_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"CUDA 13\.99\.1 has no tag"):
        cuda_pin(METADATA.replace("13.2.2", "13.99.1"), "linux_x86_64")


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


@given(
    st.from_regex(
        r"torch-2\.1[0-9]\.[0-9](\+[a-z0-9_.]{0,8})?-cp[0-9_]{1,5}t?-[a-z0-9_]{1,8}-"
        r"(manylinux_2_28_x86_64|win_amd64|any)\.whl",
        fullmatch=True,
    )
)
def test_a_wheel_name_parses_or_is_refused_never_raises(name: str) -> None:
    row = parse_torch_wheel(name, newest_python="3.15")
    if row is not None:
        assert row.cuda is None or row.cuda.startswith("cu")
        minor = int(row.python.split(".")[1])
        assert minor <= 16 and row.version.local is None  # 3.15 + 1


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=12),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
        max_leaves=30,
    )
)  # fmt: skip
def test_any_json_is_files_or_a_value_error(data: object) -> None:
    try:
        files = parse_json(
            {"files": data} if isinstance(data, list) else data, "https://x.invalid/"
        )
    except ValueError:
        return
    assert all(isinstance(f.filename, str) and f.url.startswith("https://") for f in files)


def test_two_indexes_merge_and_the_newest_patch_wins() -> None:
    v0, v1 = Version("2.15.0"), Version("2.15.1")
    plain, threaded = {"free_threaded": False}, {"free_threaded": True}
    pypi = observe_rows([(Row(v1, "cu132", "3.15", "linux_x86_64", **plain), False)])
    pytorch = observe_rows(
        [
            (Row(v0, "cu130", "3.11", "win_amd64", **plain), False),
            (Row(v1, "cu130", "3.12", "win_amd64", **plain), False),
            (Row(v1, "cu130", "3.14", "win_amd64", **threaded), False),
        ]
    )
    merged = merge(pytorch, pypi)["2.15"]
    assert merged.version == v1
    assert merged.builds == {"cu130": {"win_amd64"}, "cu132": {"linux_x86_64"}}
    assert merged.pythons == {"3.12", "3.15"} and merged.free_threaded == {"3.14t"}


def test_only_minors_past_the_grid_are_added() -> None:
    seen = {
        "2.3": Seen(Version("2.3.1"), {"cu121": {"linux_x86_64"}}, {"3.12"}),
        "2.15": Seen(Version("2.15.0"), {"cu132": {"linux_x86_64"}}, {"3.11", "3.15"}),
    }
    proposal = propose(old_grid(), seen, arch=ARCH, toolkits={*TOOLKITS, "cu121"})
    assert '"2.3.1"' not in proposal.text  # the grid starts at 2.4 on purpose
    assert proposal.text.endswith(
        '  - torch: "2.15.0"\n    python: ["3.11", "3.15"]\n    builds: {cu132: [linux_x86_64]}\n'
    )


def test_the_cuda_pypi_pins_is_proposed_as_pypi_where_it_is_planned() -> None:
    """build --local reads `pypi` to pick a torch whose PyPI wheel fits: a proposed release
    carries it, except for a build the farm cannot plan (validate would refuse the pin)."""
    seen = {
        "2.15": Seen(
            Version("2.15.0"),
            {"cu132": {"linux_x86_64", "linux_aarch64"}, "cu134": {"win_amd64"}},
            {"3.11", "3.15"},
            pypi={"linux_aarch64": "cu132", "linux_x86_64": "cu132", "win_amd64": "cu134"},
        )
    }
    proposal = propose(old_grid(), seen, arch=ARCH, toolkits=TOOLKITS)
    assert proposal.text.endswith(
        "    builds: {cu132: [linux_x86_64, linux_aarch64]}\n"
        "    pypi: {linux_x86_64: cu132, linux_aarch64: cu132}\n"
    )
    assert "PyPI's wheel cu132 on linux_x86_64, cu132 on linux_aarch64" in proposal.changes[0]


def test_a_new_patch_adds_the_pins_the_release_lacks_and_keeps_the_rest() -> None:
    text = old_grid() + (
        '  - torch: "2.15.0"\n    python: ["3.11", "3.15"]\n'
        "    builds: {cu132: [linux_x86_64, linux_aarch64]}\n    pypi: {linux_x86_64: cu132}\n"
    )
    seen = {
        "2.15": Seen(
            Version("2.15.1"),
            {"cu132": {"linux_x86_64", "linux_aarch64"}},
            {"3.11", "3.15"},
            pypi={"linux_aarch64": "cu132"},
        )
    }
    proposal = propose(text, seen, arch=ARCH, toolkits=TOOLKITS)
    assert "    pypi: {linux_x86_64: cu132, linux_aarch64: cu132}\n" in proposal.text
    assert "torch 2.15.1: PyPI's wheel cu132 on linux_x86_64, cu132 on linux_aarch64" in (
        proposal.changes
    )
    again = propose(proposal.text, seen, arch=ARCH, toolkits=TOOLKITS)
    assert not again.changed  # the pins once written are no change


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        (JSON, b'{"files": [' + b'{"filename": "x", "url": "y"},' * 200 + b"{}]}"),
        ("text/html", b'<a href="torch-2.15.0-cp312-cp312-win_amd64.whl">x</a>' * 200),
    ],
)
def test_an_index_page_past_its_size_limit_is_one_network_error(
    monkeypatch: pytest.MonkeyPatch, kind: str, body: bytes
) -> None:
    """Both forms are read under the same byte cap (64 MiB for real; 4 KiB here)."""
    monkeypatch.setattr(simple, "MAX_PAGE_BYTES", 4096)
    response = requests.Response()
    response.status_code, response.url = 200, "https://x.invalid/simple/torch/"
    response.headers["Content-Type"] = kind
    response.raw = io.BytesIO(body)
    session = mock.Mock(spec=requests.Session)
    session.request.return_value = response
    with pytest.raises(NetworkError, match=r"x\.invalid/simple/torch/: .*over 4,096 bytes"):
        simple.project_files(session, "https://x.invalid/simple/torch/")


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
