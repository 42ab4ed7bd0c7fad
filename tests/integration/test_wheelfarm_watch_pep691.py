"""`wheelfarm watch --pypi-index` against a PEP 691 fake of PyPI on loopback (issue 24): a JSON
torch page in PyPI's shape (upload-time, requires-python, size; no `.metadata` files), real
little wheels whose METADATA pins CUDA as torch's do, read by HTTP range requests. No test here
touches the network: PyTorch's index is a loopback fake or a closed port."""

from __future__ import annotations

import http
import io
import json
import shutil
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from ghsim.fakegithub import serving as loopback
from tests.integration.conftest import serve_index, shipped, wheelfarm
from tests.roots import REPO
from wheelfarm.index.serve import served

pytestmark = pytest.mark.integration


CLOSED = "http://127.0.0.1:9/whl/"  # nothing listens on the discard port


PLATFORMS = {
    "linux_x86_64": "manylinux_2_28_x86_64",
    "linux_aarch64": "manylinux_2_28_aarch64",
    "win_amd64": "win_amd64",
}


JSON = "application/vnd.pypi.simple.v1+json"


PIN = 'cuda-toolkit[cublas,cudart,cusparse]==13.2.2; platform_system == "Linux"'


def wheel(name: str, *, linux: bool, pin: str = PIN) -> bytes:
    """A small real wheel holding the METADATA torch ships (a CUDA pin on Linux only)."""
    requires = ["filelock", *([pin] if linux else []), 'optree>=0.13.0; extra == "optree"']
    metadata = "Metadata-Version: 2.1\nName: torch\nVersion: 2.15.0\nRequires-Python: >=3.11\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        # 600 kB stored ahead of the METADATA: a range reader must not fetch it
        z.writestr("torch/__init__.py", "# " + "x" * 600_000, compress_type=zipfile.ZIP_STORED)
        z.writestr("torch-2.15.0.dist-info/METADATA", metadata)
        z.writestr("torch-2.15.0.dist-info/WHEEL", f"Wheel-Version: 1.0\nTag: {name}\n")
    return out.getvalue()


@dataclass
class Fake:
    """What the fake PyPI serves: path -> (content type, body); its behaviour knobs."""

    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    ranges: bool = True
    delay: float = 0.0
    requests: list[str] = field(default_factory=list)


def pypi_files(extra: list[str] | None = None) -> Fake:
    """torch 2.15.0 as PyPI lists it (cp311-cp315, cp314t/cp315t), plus `extra` names."""
    fake = Fake()
    entries = []
    names = [
        f"torch-2.15.0-cp3{m}-cp3{m}{t}-{tag}.whl"
        for tag in PLATFORMS.values()
        for m, t in [(11, ""), (12, ""), (13, ""), (14, ""), (15, ""), (14, "t"), (15, "t")]
    ]
    names += [f"torch-2.14.1-cp3{m}-cp3{m}-manylinux_2_28_x86_64.whl" for m in range(10, 15)]
    for name in [*names, *(extra or [])]:
        body = wheel(name, linux="manylinux" in name)
        fake.files[f"/packages/{name}"] = ("application/octet-stream", body)
        entries.append(
            {
                "filename": name,
                "url": f"../../packages/{name}",
                "hashes": {"sha256": "0" * 64},
                "requires-python": ">=3.11",
                "size": len(body),
                "upload-time": "2026-10-28T15:17:47Z",
                "yanked": False,
            }
        )
    page = {"meta": {"api-version": "1.1"}, "name": "torch", "files": entries, "versions": []}
    fake.files["/simple/torch/"] = (
        "application/vnd.pypi.simple.v1+json",
        json.dumps(page).encode(),
    )
    return fake


class _Handler(http.server.BaseHTTPRequestHandler):
    fake: Fake

    def do_GET(self) -> None:
        self.fake.requests.append(self.path)
        time.sleep(self.fake.delay)
        found = self.fake.files.get(self.path)
        if found is None:
            self.send_error(404)
            return
        kind, body = found
        if kind == "redirect":  # body: where to
            self.send_response(302)
            self.send_header("Location", body.decode())
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        wanted = self.headers.get("Range", "")
        if wanted.startswith("bytes=") and self.fake.ranges:
            first, last = (int(x) for x in wanted[6:].split("-"))
            part = body[first : last + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {first}-{first + len(part) - 1}/{len(body)}")
            body = part
        else:
            self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client stopped reading: a slow answer timed out, or a whole wheel refused

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        """Quiet."""


@contextmanager
def serving(fake: Fake) -> Iterator[str]:
    """The fake PEP 691 index on loopback (tests/fakegithub.py's server), its /simple/ URL."""
    with loopback(type("Handler", (_Handler,), {"fake": fake})) as base:
        yield f"{base}/simple/"


@pytest.fixture
def farm_watch_pep691(tmp_path: Path) -> Path:
    """A farm root whose torch.yaml ends at 2.14.1, as it did before torch 2.15, with the demo
    as its one package: the others' upstreams (PyPI sdists, git tags) are the package watch's,
    tested in test_watch.py, and no fake here serves them."""
    root = tmp_path / "farm_watch_pep691"
    shutil.copytree(REPO.matrix, root / "matrix")
    for package in (root / "matrix" / "packages").glob("*.yaml"):
        if package.name != "wheelfarm-demo.yaml":
            package.unlink()
    path = root / "matrix" / "torch.yaml"
    text = path.read_text()
    path.write_text(text[: text.index('  - torch: "2.15.0"')])
    return root


def watch(
    farm_watch_pep691: Path, pypi: str, *args: str, torch_index: str = CLOSED
) -> tuple[str, str, int]:
    """The watch, with a --timeout (so the closed port is retried briefly) unless `args` set one."""
    limit = [] if "--timeout" in args else ["--timeout", "60"]
    result = wheelfarm("watch", "--torch-index", torch_index, "--pypi-index", pypi, *limit, *args,
                       cwd=farm_watch_pep691, check=False)  # fmt: skip
    assert "Traceback" not in result.stderr
    return result.stdout, result.stderr, result.returncode


def release(farm_watch_pep691: Path, minor: str) -> dict[str, object]:
    data = yaml.safe_load((farm_watch_pep691 / "matrix" / "torch.yaml").read_text())
    (found,) = [r for r in data["releases"] if r["torch"].startswith(minor + ".")]
    return found  # type: ignore[no-any-return]


def test_pypi_alone_proposes_what_it_proves_and_names_the_rest(farm_watch_pep691: Path) -> None:
    hostile = [
        "torch-2.99.0+evil-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.15.0-cp399-cp399-manylinux_2_28_x86_64.whl",
        "torch-2.15.0-cp3_12-cp3_12-manylinux_2_28_x86_64.whl",
    ]
    fake = pypi_files(hostile)
    with serving(fake) as url:
        out, err, code = watch(farm_watch_pep691, url, "--write")
    assert code == 10  # a person must add what PyPI cannot show
    assert '+  - torch: "2.15.0"' in out and '+    python: ["3.11", "3.15"]' in out
    assert "2.99" not in out and "3.99" not in out and "3_12" not in out
    assert release(farm_watch_pep691, "2.15")["builds"] == {
        "cu132": ["linux_x86_64", "linux_aarch64"]
    }
    assert release(farm_watch_pep691, "2.15")["pypi"] == {
        "linux_x86_64": "cu132",
        "linux_aarch64": "cu132",
    }
    source = f"[{url}torch/"
    assert f"torch 2.15.0: uploaded 2026-10-28T15:17:47Z; Requires-Python >=3.11 {source}]" in err
    assert (
        "torch 2.15.0 linux_x86_64: cp311, cp312, cp313, cp314, cp315; free-threaded cp314t, "
        f"cp315t {source}]"
    ) in err
    assert f"torch 2.15.0 linux_x86_64: default CUDA cu132 ({PIN}) {source}: METADATA of" in err
    assert "torch 2.15.0 win_amd64: the wheel pins no CUDA (a CPU build)" in err
    assert f"{CLOSED} did not answer" in err
    assert "its other CUDA variants and its CUDA builds for win_amd64" in err
    wheelfarm("validate", cwd=farm_watch_pep691)  # what was written plans as it is
    # the zip directory by range, never a whole wheel: 3 probes, a few requests each
    assert sum(p.startswith("/packages/") for p in fake.requests) <= 3 * 4


def test_both_indexes_merge(farm_watch_pep691: Path, tmp_path: Path) -> None:
    files = shipped()
    files = [f for f in files if not f[0].startswith("2.15")]
    files += [("2.15.0", "cu130", f"3.{m}", p, False) for m in range(11, 16) for p in PLATFORMS]
    serve_index(tmp_path / "torch-index" / "whl", files)
    with serving(pypi_files()) as url, served(tmp_path / "torch-index") as root:
        out, err, code = watch(farm_watch_pep691, url, "--write", torch_index=f"{root}whl/")
    assert code == 0, err
    assert release(farm_watch_pep691, "2.15")["builds"] == {
        "cu130": ["linux_x86_64", "linux_aarch64", "win_amd64"],
        "cu132": ["linux_x86_64", "linux_aarch64"],
    }
    assert "torch 2.15.0: cu130 linux_aarch64, linux_x86_64, win_amd64; cp311" in err
    assert "did not answer" not in err and "unchecked" not in err
    assert '+  - torch: "2.15.0"' in out


def test_a_server_without_ranges_is_named_not_downloaded(farm_watch_pep691: Path) -> None:
    fake = pypi_files()
    fake.ranges = False
    with serving(fake) as url:
        _, err, code = watch(farm_watch_pep691, url)
    assert code == 10
    assert "its CUDA was not read" in err and "does not answer range requests" in err


def test_a_deep_pep691_page_is_one_line_and_exit_9(farm_watch_pep691: Path) -> None:
    fake = Fake()
    deep = ('{"files": ' + "[" * 200 + "]" * 200 + "}").encode()
    fake.files["/simple/torch/"] = (JSON, deep)
    with serving(fake) as url:
        out, err, code = watch(farm_watch_pep691, url)
    assert code == 9
    assert "not an index page" in err and "nested" in err
    assert err.count("\n") == 1 and out == ""


def test_the_overall_timeout_holds_against_a_slow_server(farm_watch_pep691: Path) -> None:
    fake = pypi_files()
    fake.delay = 3.0
    started = time.monotonic()
    with serving(fake) as url:
        _, err, code = watch(farm_watch_pep691, url, "--timeout", "1.5")
    assert code == 9
    assert time.monotonic() - started < 10  # seconds, with Python's start
    assert "(--timeout 1.5s)" in err


def test_pep658_metadata_files_are_read_where_promised(farm_watch_pep691: Path) -> None:
    fake = pypi_files()
    page = json.loads(fake.files["/simple/torch/"][1])
    for entry in page["files"]:
        entry["core-metadata"] = {"sha256": "0" * 64}
        path = f"/packages/{entry['filename']}"
        with zipfile.ZipFile(io.BytesIO(fake.files.pop(path)[1])) as z:  # only .metadata served
            fake.files[path + ".metadata"] = (
                "text/plain",
                z.read("torch-2.15.0.dist-info/METADATA"),
            )
    fake.files["/simple/torch/"] = (JSON, json.dumps(page).encode())
    with serving(fake) as url:
        _, err, code = watch(farm_watch_pep691, url)
    assert code == 10
    assert "default CUDA cu132" in err and "PEP 658 .metadata" in err


def test_a_corrupt_wheel_is_a_named_unread_cuda(farm_watch_pep691: Path) -> None:
    fake = pypi_files()
    for path, (kind, body) in list(fake.files.items()):
        if path.endswith(".whl"):  # the zip directory's entries garbled, the size kept
            start, end = body.rindex(b"PK\x01\x02"), body.rindex(b"PK\x05\x06")
            fake.files[path] = (kind, body[:start] + b"\xff" * (end - start) + body[end:])
    with serving(fake) as url:
        out, err, code = watch(farm_watch_pep691, url)
    assert code == 10 and "2.15.0" not in out  # nothing proven, nothing proposed
    assert "torch 2.15.0 linux_x86_64: its CUDA was not read (METADATA of" in err


@pytest.mark.parametrize(
    "url",
    [
        "http://evil.example/packages/{name}",  # plain http from another host
        "https://evil.example/packages/{name}",  # https, but a host the watch does not expect
        "http://localhost.evil.example/packages/{name}",
    ],
)
def test_file_urls_a_page_names_are_held_to_https_and_expected_hosts(
    farm_watch_pep691: Path, url: str
) -> None:
    """Issue 36 row 6: the https-or-loopback rule and the host holds for the file URLs inside
    the page, not only the index URL; nothing is read from such a URL."""
    fake = pypi_files()
    page = json.loads(fake.files["/simple/torch/"][1])
    for entry in page["files"]:
        if "x86_64" in entry["filename"]:
            entry["url"] = url.format(name=entry["filename"])
    fake.files["/simple/torch/"] = (JSON, json.dumps(page).encode())
    with serving(fake) as served:
        _, err, _ = watch(farm_watch_pep691, served)
    refused = [line for line in err.splitlines() if "linux_x86_64: its CUDA was not read" in line]
    assert len(refused) == 1 and "file URL 'http" in refused[0] and "evil.example" in refused[0]
    assert not any("x86_64" in p for p in fake.requests)  # never fetched
    assert "torch 2.15.0 linux_aarch64: default CUDA cu132" in err  # the rest goes on


def test_a_cuda_no_tag_can_write_is_one_line_and_the_rest_goes_on(farm_watch_pep691: Path) -> None:
    """Issue 36 row 8: cuda-toolkit==13.99.1 is not cu1399 (which reads back as CUDA 139.9)."""
    fake = pypi_files()
    page = json.loads(fake.files["/simple/torch/"][1])
    for entry in page["files"]:
        if entry["filename"].endswith("x86_64.whl"):
            body = wheel(entry["filename"], linux=True, pin=PIN.replace("13.2.2", "13.99.1"))
            fake.files[f"/packages/{entry['filename']}"] = ("application/octet-stream", body)
            entry["size"] = len(body)
    fake.files["/simple/torch/"] = (JSON, json.dumps(page).encode())
    with serving(fake) as url:
        out, err, _ = watch(farm_watch_pep691, url)
    assert "cu1399" not in out + err and "139.9" not in out + err
    (line,) = [x for x in err.splitlines() if "13.99.1 has no tag" in x]
    assert "torch 2.15.0 linux_x86_64: left out" in line
    assert "torch 2.15.0 linux_aarch64: default CUDA cu132" in err
    assert '+  - torch: "2.15.0"' in out  # the report and its proposal go on


def test_a_redirect_off_https_or_the_expected_hosts_is_not_followed(
    farm_watch_pep691: Path,
) -> None:
    """A file URL on the index's own host that answers with a redirect elsewhere: refused at the
    redirect, one line, and the rest of the report goes on."""
    fake = pypi_files()
    for path in list(fake.files):
        if path.endswith("x86_64.whl"):
            fake.files[path] = ("redirect", b"http://evil.example/t.whl")
    with serving(fake) as url:
        _, err, _ = watch(farm_watch_pep691, url)
    (line,) = [x for x in err.splitlines() if "linux_x86_64: its CUDA was not read" in x]
    assert "redirects to 'http://evil.example/t.whl'" in line and "use https" in line
    assert "torch 2.15.0 linux_aarch64: default CUDA cu132" in err
