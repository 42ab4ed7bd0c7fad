"""The CUDA installer on synthetic redistributable archives: the pinned manifest picks each
component's archive for the platform, every download is checked against its sha256, the archives
merge into NVIDIA's layout, and a manifest or archive that does not fit is refused with the fix."""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.unit.helpers.roots import package_yaml
from wheelfarm.builder import redist
from wheelfarm.core.errors import NetworkError, ToolchainError
from wheelfarm.core.http import Deadline
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.facts import load_facts

TABLE = load_facts(REPO).toolkits
CU130 = TABLE.toolkits["cu130"]
COMPONENTS = TABLE.components_for(CU130)


def _tar(path: Path, top: str, files: dict[str, bytes], links: dict[str, str]) -> None:
    with tarfile.open(path, "w:xz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mode = len(data), 0o755
            tf.addfile(info, io.BytesIO(data))
        for name, target in links.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.type, info.linkname = tarfile.SYMTYPE, target
            tf.addfile(info)


class Mirror:
    """NVIDIA's redist folder on disk (a manifest and synthetic archives), the `download` the
    installer calls (sha256 checked as core.http's is), and a farm root pinning the manifest."""

    def __init__(self, folder: Path, platform: str, root: FarmRoot) -> None:
        self.folder, self.platform, self.root = folder, platform, root
        self.manifest: dict[str, object] = {"release_label": str(CU130.version)}
        self.fetched: list[str] = []
        self.deadlines: list[Deadline | None] = []
        for component in COMPONENTS:
            self.add(component, {f"include/{component}.h": b"", "LICENSE": component.encode()})

    def add(
        self, component: str, files: dict[str, bytes], links: dict[str, str] | None = None
    ) -> None:
        top = f"{component}-{self.platform}-13.0.88-archive"
        zipped = self.platform.startswith("windows")
        relative = f"{component}/{self.platform}/{top}.{'zip' if zipped else 'tar.xz'}"
        path = self.folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if zipped:
            with zipfile.ZipFile(path, "w") as zf:
                for name, data in files.items():
                    zf.writestr(f"{top}/{name}", data)
        else:
            _tar(path, top, files, links or {})
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        self.manifest[component] = {
            "version": "13.0.88",
            self.platform: {"relative_path": relative, "sha256": digest},
        }

    def pin(self) -> FarmRoot:
        """Write the manifest and pin its sha256 in the root's toolkits.yaml, as shipped."""
        data = json.dumps(self.manifest).encode()
        (self.folder / f"redistrib_{CU130.version}.json").write_bytes(data)
        path = self.root.matrix / "toolkits.yaml"
        sha = hashlib.sha256(data).hexdigest()
        line = f'  cu130: {{version: "13.0.2", manifest_sha256: "{sha}", gcc_toolset: 14, msvc_toolset: "14.44"}}'
        path.write_text(re.sub(r"^  cu130:.*$", line, path.read_text(), flags=re.MULTILINE))
        return self.root

    def download(
        self, url: str, dest: Path, sha256: str, *, deadline: Deadline | None = None
    ) -> Path:
        self.fetched.append(url)
        self.deadlines.append(deadline)
        source = self.folder / url.removeprefix(TABLE.redist)
        if hashlib.sha256(source.read_bytes()).hexdigest() != sha256:
            msg = f"sha256 mismatch for {url}"
            raise NetworkError(msg)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, dest)
        return dest


@pytest.fixture
def mirror(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, matrix_dir: Callable[..., FarmRoot]
) -> Callable[[str], Mirror]:
    def make(platform: str) -> Mirror:
        m = Mirror(tmp_path / "redist", platform, matrix_dir({"demo-pkg": package_yaml()}))
        monkeypatch.setattr(redist, "download", m.download)
        return m

    return make


def test_linux_toolkit_merges_into_nvidia_layout(
    mirror: Callable[[str], Mirror], tmp_path: Path
) -> None:
    m = mirror("linux-x86_64")
    m.add("cuda_nvcc", {"bin/nvcc": b"#!nvcc", "include/crt/host_config.h": b"", "LICENSE": b"n"})
    m.add(
        "cuda_cudart", {"lib/libcudart.so.13": b"\x7fELF"}, {"lib/libcudart.so": "libcudart.so.13"}
    )
    root = m.pin()
    home = redist.install_toolkit(root, "cu130", "linux_x86_64", tmp_path / "tk", tmp_path / "dl")
    assert home == tmp_path / "tk" / "cuda-13.0.2"
    assert (home / "bin" / "nvcc").read_bytes() == b"#!nvcc"
    assert (home / "lib" / "libcudart.so").readlink() == Path("libcudart.so.13")
    assert (home / "lib64").readlink() == Path("lib")
    assert (home / "targets" / "x86_64-linux" / "include" / "crt" / "host_config.h").is_file()
    assert (home / "include" / "cuda_crt.h").is_file() and (
        home / "include" / "libnvvm.h"
    ).is_file()
    record = json.loads((home / redist.COMPLETE).read_text())
    assert record["version"] == "13.0.2" and record["platform"] == "linux-x86_64"
    assert set(record["components"]) == set(COMPONENTS)
    fetched = len(m.fetched)
    assert (
        redist.install_toolkit(root, "cu130", "linux_x86_64", tmp_path / "tk", tmp_path / "dl")
        == home
    )
    assert len(m.fetched) == fetched  # a complete toolkit is reused: nothing fetched again


def test_install_cuda_bounds_every_download_by_its_timeout(
    mirror: Callable[[str], Mirror], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """install-cuda is a network command: its --timeout (default 3600 s) is one Deadline that
    the manifest and every archive download share, so a mirror dripping bytes cannot hold a CI
    job for hours."""
    from wheelfarm.cli import main

    m = mirror("linux-x86_64")
    root = m.pin()
    argv = ["install-cuda", "cu130", "--platform", "linux_x86_64", "--root", str(root.path)]
    argv += ["--dest", str(tmp_path / "tk"), "--cache", str(tmp_path / "cache")]
    assert main([*argv, "--timeout", "5"]) == 0
    assert capsys.readouterr().out.strip().endswith("cuda-13.0.2")
    assert len(m.deadlines) == len(COMPONENTS) + 1  # the manifest, then each archive
    (deadline,) = set(m.deadlines)
    assert deadline is not None and (deadline.seconds, deadline.what) == (5, "--timeout")
    shutil.rmtree(tmp_path / "tk")
    m.deadlines.clear()
    assert main(argv) == 0
    assert {d.seconds for d in m.deadlines if d is not None} == {3600}
    assert None not in m.deadlines


def test_windows_toolkit_from_zips_gets_no_linux_links(
    mirror: Callable[[str], Mirror], tmp_path: Path
) -> None:
    root = mirror("windows-x86_64").pin()
    home = redist.install_toolkit(root, "cu130", "win_amd64", tmp_path / "tk", tmp_path / "dl")
    assert (home / "include" / "cuda_crt.h").is_file()
    assert not (home / "lib64").exists() and not (home / "targets").exists()


def test_a_changed_manifest_is_refused_before_anything_is_unpacked(
    mirror: Callable[[str], Mirror], tmp_path: Path
) -> None:
    m = mirror("linux-x86_64")
    root = m.pin()
    (m.folder / f"redistrib_{CU130.version}.json").write_text("{}")  # not the pinned bytes
    with pytest.raises(NetworkError, match="sha256 mismatch"):
        redist.install_toolkit(root, "cu130", "linux_x86_64", tmp_path / "tk", tmp_path / "dl")
    assert not (tmp_path / "tk").exists()


def test_a_component_missing_for_the_platform_is_named(
    mirror: Callable[[str], Mirror], tmp_path: Path
) -> None:
    m = mirror("linux-sbsa")
    m.manifest["libnvvm"] = {"version": "13.0.88", "windows-x86_64": {}}
    root = m.pin()
    with pytest.raises(
        ToolchainError,
        match=r"libnvvm 13.0.88 in redistrib_13.0.2.json has no linux-sbsa archive "
        r"\(has: windows-x86_64\)",
    ):
        redist.install_toolkit(root, "cu130", "linux_aarch64", tmp_path / "tk", tmp_path / "dl")
    assert not (tmp_path / "tk" / "cuda-13.0.2").exists()


def test_archive_of_reads_a_per_major_variant_and_names_unknown_components() -> None:
    manifest = {
        "release_label": "13.0.2",
        "libfoo": {"linux-x86_64": {"cuda13": {"relative_path": "a.tar.xz", "sha256": "b"}}},
    }
    assert redist.archive_of(manifest, "libfoo", "linux-x86_64", 13)["relative_path"] == "a.tar.xz"
    with pytest.raises(ToolchainError, match=r"has no component 'libbar' \(has: libfoo\); fix"):
        redist.archive_of(manifest, "libbar", "linux-x86_64", 13)


def test_a_link_leaving_the_toolkit_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.xz"
    _tar(archive, "evil-archive", {"bin/x": b""}, {"lib/escape": "../../../etc/passwd"})
    with pytest.raises(ToolchainError, match=r"evil\.tar\.xz"):
        redist._unpack(archive, tmp_path / "scratch")


def test_a_zip_member_leaving_the_toolkit_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("top/../../x", b"")
    with pytest.raises(ToolchainError, match="climbs out of the folder"):
        redist._unpack(archive, tmp_path / "scratch")
