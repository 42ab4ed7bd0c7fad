"""Hostile faults on a site, for real (issue 23): two processes writing one --out, a disk that
fills while a site is written, a server asked for a NUL byte. Each ends in one line naming the
value and the fix, a non-zero exit, and nothing written or lost."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import unquote

import pytest

from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.index.serve import served

from .conftest import wheelfarm

pytestmark = pytest.mark.integration
CELLS = [(py, plat) for py in ("310", "311", "312", "313") for plat in ("x86_64", "aarch64")]


def house_of(folder: Path, count: int, body: bytes = b"") -> Path:
    """A wheelhouse of `count` tiny farm wheels."""
    folder.mkdir(exist_ok=True)
    for i in range(count):
        py, arch = CELLS[i % len(CELLS)]
        name, version = f"pkg{i % 20:02d}", f"1.{i // len(CELLS)}.0+cu130torch2.14"
        info = f"{name}-{version}.dist-info"
        tag = f"cp{py}-cp{py}-manylinux_2_28_{arch}"
        write_wheel(
            folder / f"{name}-{version}-{tag}.whl",
            {
                f"{name}/__init__.py": body,
                f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
                f"{info}/WHEEL": f"Wheel-Version: 1.0\nTag: {tag}\n".encode(),
            },
            info,
        )
    return folder


def whole(site: Path) -> None:
    """Every wheel packages.json lists is under files/ with the bytes of its sha256, and every
    file the site's list names has the bytes of the hash it gives."""
    for w in json.loads((site / "packages.json").read_text())["wheels"]:
        data = (site / unquote(w["url"])).read_bytes()
        assert hashlib.sha256(data).hexdigest() == w["sha256"], w["filename"]
    lines = (site / ".wheelfarm-site").read_text().splitlines()
    files = json.loads("{" + "".join(lines[lines.index('},"files":{') + 1 : -1]) + "}")
    for rel, sha in files.items():
        assert hashlib.sha256((site / rel).read_bytes()).hexdigest() == sha, rel


HOLD = """
import sys, time
from pathlib import Path
from wheelfarm.index.lock import site_lock
with site_lock(Path(sys.argv[1]).resolve()):
    Path(sys.argv[2]).write_text("held")
    time.sleep(60)
"""


def test_a_second_writer_waits_then_refuses_naming_the_holder(tmp_path: Path) -> None:
    house, out, ready = house_of(tmp_path / "house", 4), tmp_path / "site", tmp_path / "ready"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out), str(ready)])
    try:
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        start = time.monotonic()
        second = wheelfarm(
            "index", "--wheelhouse", house, "--out", out, "--lock-timeout", "1", check=False
        )
        waited = time.monotonic() - start
    finally:
        holder.kill()
        holder.wait()
    assert second.returncode == 7
    (line,) = second.stderr.strip().splitlines()
    assert f"held by pid {holder.pid} on " in line
    assert "waited 1 s" in line and "--lock-timeout" in line
    assert waited >= 1
    assert not out.exists()  # nothing written
    wheelfarm("index", "--wheelhouse", house, "--out", out)  # the holder is gone: it runs
    whole(out)


def test_two_index_runs_on_one_out_leave_one_whole_site(tmp_path: Path) -> None:
    house, out = house_of(tmp_path / "house", 400), tmp_path / "site"
    wheelfarm("index", "--wheelhouse", house, "--out", out)
    house_of(house, 40, body=b"# new bytes\n")  # forty wheels change: both runs write
    argv = [sys.executable, "-m", "wheelfarm", "index", "--wheelhouse", house, "--out", out]
    runs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)]
    time.sleep(0.2)
    runs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = [(run.wait(120), *run.communicate()) for run in runs]
    assert [rc for rc, _, _ in results] == [0, 0], results
    whole(out)
    again = wheelfarm("index", "--wheelhouse", house, "--out", out)
    assert "0 files written" in again.stdout  # nothing left for a rerun to heal


FULL = """
import errno, os, sys
from wheelfarm import cli
from wheelfarm.index import fs
real = fs.write
def full(path, data):
    if path.endswith(".metadata"):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
    real(path, data)
fs.write = full
sys.exit(cli.main(["index", "--wheelhouse", sys.argv[1], "--out", sys.argv[2]]))
"""


def test_a_disk_that_fills_is_one_line_and_the_old_site_stays(tmp_path: Path) -> None:
    house, out = house_of(tmp_path / "house", 8), tmp_path / "site"
    wheelfarm("index", "--wheelhouse", house, "--out", out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    house_of(house, 9, body=b"# new bytes\n")
    run = subprocess.run(
        [sys.executable, "-c", FULL, str(house), str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 7, run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert "No space left on device" in line and "the old site is unchanged" in line
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["house", "site", "site.lock"]


def status(url: str) -> int:
    """The HTTP status a GET of `url` answers."""
    try:
        with urllib.request.urlopen(url) as answer:  # noqa: S310 - our own loopback server
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_serve_answers_a_nul_byte_with_400_and_no_traceback(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    house, out = house_of(tmp_path / "house", 2), tmp_path / "site"
    wheelfarm("index", "--wheelhouse", house, "--out", out)
    with served(out) as url:
        codes = [status(url + p) for p in ("files/%00", "files/%00.whl", "%00/index.html")]
        assert status(url + "packages.json") == 200  # still serving
    assert codes == [400, 400, 400]
    assert "Traceback" not in capfd.readouterr().err
