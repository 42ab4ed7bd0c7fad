"""Install a CUDA toolkit from NVIDIA's redistributable archives, the same way on every platform.

The release's manifest (redistrib_<version>.json, its sha256 pinned in toolkits.yaml) names
each component's archive per platform with a sha256, so Linux and Windows get the same exact
toolkit, every download is retried (core.http) and checked, and no distribution
package manager or silent installer decides what lands. The layout matches NVIDIA's own: bin/,
include/, lib/ (lib64 and targets/<arch>-linux point there on Linux, as nvcc.profile expects).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tarfile
import zipfile
from pathlib import Path
from typing import Any

from wheelfarm.core import jsonread
from wheelfarm.core.archive import unsafe_reason
from wheelfarm.core.errors import ToolchainError
from wheelfarm.core.http import Deadline, download
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.facts import Toolkit, ToolkitTable, load_facts

logger = logging.getLogger(__name__)
COMPLETE = ".wheelfarm-toolkit.json"  # written last: a toolkit folder without it is partial


def _manifest(
    table: ToolkitTable, tk: Toolkit, downloads: Path, deadline: Deadline | None
) -> dict[str, Any]:
    """The release's manifest, checked against its sha256 pinned in toolkits.yaml (the loader
    refuses a row without one)."""
    url = table.manifest_url(tk)
    path = downloads / url.rsplit("/", 1)[1]
    download(url, path, tk.manifest_sha256, deadline=deadline)
    return dict(jsonread.loads(path.read_bytes(), what=str(path)))


def archive_of(
    manifest: dict[str, Any], component: str, platform: str, major: int
) -> dict[str, str]:
    """{relative_path, sha256} of one component's archive for one redist platform (some
    manifests nest it once more, per CUDA major)."""
    release = manifest.get("release_label", "?")
    entry = manifest.get(component)
    if not isinstance(entry, dict):
        have = sorted(k for k, v in manifest.items() if isinstance(v, dict))
        msg = (
            f"redistrib_{release}.json has no component {component!r} (has: {', '.join(have)}); "
            f"fix the components in toolkits.yaml"
        )
        raise ToolchainError(msg)
    archive = entry.get(platform)
    if isinstance(archive, dict) and "relative_path" not in archive:
        archive = archive.get(f"cuda{major}")
    if not isinstance(archive, dict) or "relative_path" not in archive:
        have = sorted(k for k in entry if "-" in k)
        msg = (
            f"{component} {entry.get('version', '?')} in redistrib_{release}.json has no "
            f"{platform} archive (has: {', '.join(have)}); drop it for this platform"
        )
        raise ToolchainError(msg)
    return {"relative_path": archive["relative_path"], "sha256": archive["sha256"]}


def _unpack(archive: Path, scratch: Path) -> Path:
    """Unpack into an empty `scratch`; return the archive's one top folder. tarfile's data
    filter refuses members and links that leave the folder; zip names are checked alike."""
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                reason = unsafe_reason(name)
                if reason is not None:
                    msg = f"{archive.name}: member {name!r} {reason}"
                    raise ToolchainError(msg)
            zf.extractall(scratch)  # noqa: S202 - every name checked above
    else:
        with tarfile.open(archive) as tf:
            try:  # the data filter refuses absolute names and links leaving `scratch`
                tf.extractall(scratch, filter="data")
            except tarfile.FilterError as exc:
                msg = f"{archive.name}: {exc}"
                raise ToolchainError(msg) from exc
    tops = list(scratch.iterdir())
    if len(tops) != 1 or not tops[0].is_dir():
        msg = f"{archive.name}: expected one top folder, found {[p.name for p in tops]}"
        raise ToolchainError(msg)
    return tops[0]


def _merge(src: Path, dest: Path) -> None:
    """Move `src`'s tree into `dest`; folders both have are merged, a file both have (a
    component's LICENSE) is replaced."""
    dest.mkdir(parents=True, exist_ok=True)
    for child in src.iterdir():
        target = dest / child.name
        if target.is_dir() and not target.is_symlink() and child.is_dir():
            _merge(child, target)
        else:
            if target.is_symlink() or target.is_file():
                target.unlink()
            child.replace(target)


def _nvidia_layout(home: Path, redist_platform: str) -> None:
    """lib64 and targets/<arch>-linux/{include,lib} as NVIDIA's Linux installers lay them out
    (nvcc.profile adds -I$(TOP)/targets/<arch>-linux/include)."""
    if not redist_platform.startswith("linux-"):
        return
    if not (home / "lib64").exists():
        (home / "lib64").symlink_to("lib")
    target = home / "targets" / f"{redist_platform.removeprefix('linux-')}-linux"
    target.mkdir(parents=True, exist_ok=True)
    for name in ("include", "lib"):
        if not (target / name).exists():
            (target / name).symlink_to(Path("..", "..", name))


def install_toolkit(
    root: FarmRoot,
    cuda: str,
    platform: str,
    dest: Path,
    downloads: Path,
    deadline: Deadline | None = None,
) -> Path:
    """CUDA_HOME of the toolkit toolkits.yaml names for `cuda`, installed under `dest` (reused
    when already complete). `deadline` bounds the whole download: a mirror that sends a byte
    every few seconds never trips the per-request timeout."""
    table = load_facts(root).toolkits
    tk = table.get(cuda)
    home = dest / f"cuda-{tk.version}"
    if (home / COMPLETE).is_file():
        return home
    manifest = _manifest(table, tk, downloads, deadline)
    redist_platform = table.redist_platforms[platform]
    partial = dest / f"cuda-{tk.version}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    versions = {}
    for component in table.components_for(tk):
        entry = archive_of(manifest, component, redist_platform, tk.version.major)
        relative = entry["relative_path"]
        logger.info("CUDA %s: %s", tk.version, relative)
        url, sha256 = table.redist + relative, entry["sha256"]
        archive = download(url, downloads / Path(relative).name, sha256, deadline=deadline)
        _merge(_unpack(archive, partial.with_name(partial.name + "-scratch")), partial)
        versions[component] = manifest[component].get("version", "?")
    shutil.rmtree(partial.with_name(partial.name + "-scratch"), ignore_errors=True)
    _nvidia_layout(partial, redist_platform)
    record = {"version": str(tk.version), "platform": redist_platform, "components": versions}
    (partial / COMPLETE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(home, ignore_errors=True)
    partial.rename(home)
    return home
