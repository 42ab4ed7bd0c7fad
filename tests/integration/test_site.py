"""Tests of what site does (filed by module: tests/README.md)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest

from ghsim.fakegithub import fake_github
from tests.integration.conftest import (
    DemoBuild,
    fresh_venv,
    needs_uv,
    pip,
    retag,
    uv_install,
    wheelfarm,
)
from wheelfarm.core.commands import UV_OUTSIDE_A_VENV, install_commands
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.index.serve import served

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("fast_github_clock")]


def test_index_github_stops_on_a_next_link_to_itself(tmp_path: Path) -> None:
    """The row that looped 657 times in 30 s: one request, exit 9, one line."""
    with fake_github() as gh:
        gh.add_release("demo-pkg-v1.0")
        gh.next_link = "self"
        started = time.monotonic()
        result = wheelfarm("index", "--github", gh.repo, "--api", gh.base, "--out",
                           tmp_path / "site", check=False, env={**os.environ, "GITHUB_TOKEN": "t"})  # fmt: skip
        asked = len(gh.log)
    assert result.returncode == 9, result.stderr
    assert "points back to a page already read" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert asked <= 3 and time.monotonic() - started < 30  # the releases page, one release's assets
    assert not (tmp_path / "site").exists()


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


def status(url: str) -> int:
    """The HTTP status a GET of `url` answers."""
    try:
        with urllib.request.urlopen(url) as answer:  # noqa: S310 - our own loopback server
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


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


CP = f"cp{sys.version_info[0]}{sys.version_info[1]}"


@pytest.fixture(scope="module")
def served_site(
    demo_build: DemoBuild, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, str]]:
    house = tmp_path_factory.mktemp("house")
    shutil.copy(demo_build.wheel, house)
    shutil.copy(demo_build.wheel.with_name(demo_build.wheel.name + ".build.json"), house)
    retag(demo_build.wheel, house, label="cu126torch2.14", python=CP)
    retag(
        demo_build.wheel,
        house,
        label="cu130torch2.13",
        python="cp312" if CP != "cp312" else "cp313",
    )
    site = tmp_path_factory.mktemp("site")
    wheelfarm("index", "--wheelhouse", house, "--out", site)
    with served(site) as url:
        yield site, url


def test_site_layout_and_hashes(served_site: tuple[Path, str], demo_build: DemoBuild) -> None:
    site, _ = served_site
    page = (site / "cu130" / "torch2.14" / "wheelfarm-demo" / "index.html").read_text()
    assert demo_build.record["wheel"]["sha256"] in page
    assert 'data-core-metadata="sha256=' in page and 'data-requires-python="&gt;=3.9"' in page
    assert (site / "files" / (demo_build.wheel.name + ".metadata")).is_file()
    manifest = json.loads((site / "packages.json").read_text())
    assert {w["label"] for w in manifest["wheels"]} == {
        "cu130torch2.14",
        "cu126torch2.14",
        "cu130torch2.13",
    }
    assert (site / "cu126" / "torch2.14" / "wheelfarm-demo" / "index.html").is_file()


def test_pip_installs_the_matching_wheel_with_hash_checked(
    served_site: tuple[Path, str], demo_build: DemoBuild, tmp_path: Path
) -> None:
    _, url = served_site
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    result = pip(py, "install", "--extra-index-url", f"{url}cu130/torch2.14/", "wheelfarm-demo")
    assert result.returncode == 0, result.stderr
    show = pip(py, "show", "wheelfarm-demo").stdout
    assert "Version: 0.1.0+cu130torch2.14" in show
    subprocess.run([py, "-c", "import torch, wheelfarm_demo"], check=True)


def test_pip_refuses_a_wrong_hash(
    served_site: tuple[Path, str], demo_build: DemoBuild, tmp_path: Path
) -> None:
    site, _ = served_site
    bad = tmp_path / "bad"
    shutil.copytree(site, bad)
    page = bad / "cu130" / "torch2.14" / "wheelfarm-demo" / "index.html"
    page.write_text(page.read_text().replace(demo_build.record["wheel"]["sha256"], "0" * 64))
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    with served(bad) as url:
        result = pip(
            py,
            "install",
            "--no-cache-dir",
            "--no-deps",  # the wheel's own hash is the point; torch is there already
            "--index-url",
            f"{url}cu130/torch2.14/",
            "wheelfarm-demo",
        )
    assert result.returncode != 0
    assert "HASHES" in result.stderr.upper()


@needs_uv
def test_uv_installs_the_matching_wheel(
    served_site: tuple[Path, str], demo_build: DemoBuild, tmp_path: Path
) -> None:
    _, url = served_site
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    result = uv_install(py, "--extra-index-url", f"{url}cu130/torch2.14/", "wheelfarm-demo")
    assert result.returncode == 0, result.stderr
    assert "wheelfarm-demo==0.1.0+cu130torch2.14" in result.stderr
    subprocess.run([py, "-c", "import torch, wheelfarm_demo"], check=True)


def test_a_combo_without_a_matching_wheel_installs_nothing(
    served_site: tuple[Path, str], demo_build: DemoBuild, tmp_path: Path
) -> None:
    _, url = served_site
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    result = pip(py, "install", "--index-url", f"{url}cu130/torch2.13/", "wheelfarm-demo")
    assert result.returncode != 0
    assert "No matching distribution found for wheelfarm-demo" in result.stderr
    assert pip(py, "show", "wheelfarm-demo").returncode != 0


def test_local_farm_prints_a_working_pip_command(
    demo_build: DemoBuild, tmp_path: Path, cache_dir: Path
) -> None:
    """README's main command, end to end: plan -> build -> local site -> printed pip command."""
    store = tmp_path / "store"
    result = wheelfarm(
        "farm",
        "--store",
        store,
        "--site",
        tmp_path / "site",
        "--work",
        tmp_path / "work",
        "--cache",
        cache_dir,
    )
    lines = result.stdout.splitlines()
    index = f"{(tmp_path / 'site').resolve().as_uri()}/cu130/torch2.14/"
    torch = "https://download.pytorch.org/whl/cu130"  # torch.yaml's index_url for cu130
    printed = install_commands("wheelfarm-demo", "0.1.0+cu130torch2.14", index, torch)
    assert lines[:3] == [printed.pip, f"# {UV_OUTSIDE_A_VENV}", printed.uv]
    py = fresh_venv(tmp_path / "venv", demo_build.torch_env)
    installed = pip(py, *shlex.split(printed.pip)[1:])
    assert installed.returncode == 0, installed.stderr
    assert "Version: 0.1.0+cu130torch2.14" in pip(py, "show", "wheelfarm-demo").stdout
    again = wheelfarm("farm", "--store", store, "--site", tmp_path / "site", "--cache", cache_dir)
    assert "[plan] 0 to build, 1 already in" in again.stderr
