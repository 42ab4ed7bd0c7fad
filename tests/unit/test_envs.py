"""A new torch environment hard-links its big files to byte-identical ones of the cache's finished
envs (a group job's Pythons share the nvidia-* libraries; CI's two CPython 3.11 share all of
torch), and never a file whose bytes differ."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.runner import Recorder
from tests.unit.helpers.install import HOSTILE_REQUIREMENTS
from wheelfarm.builder import ccache, envs
from wheelfarm.core.errors import ConfigError, PlanError, ToolchainError
from wheelfarm.core.wheelfile import SOURCE_DATE_EPOCH
from wheelfarm.farm import TargetQuery, choose_target
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

MIB = 1 << 20


def _env(root: Path, python: str, files: dict[str, bytes]) -> Path:
    site = root / "lib" / python / "site-packages"
    for name, data in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
    return root


# Issue 36 row 4: nothing shared is writable, and a reuse checks the env's content.
PROBE = "311 /usr 3.11.2 (main)"


SITE = "lib/python3.11/site-packages"


def _fake_pip(lib: bytes) -> Recorder:
    """The runner for torch_env: a venv is a folder; torch's install a big library and a header."""

    def answer(args: list[str]) -> str:
        if "venv" in args:
            site = Path(args[-1]) / SITE
            (site / "torch" / "lib").mkdir(parents=True)
            (site / "torch" / "include" / "ATen").mkdir(parents=True)
            (site / "torch" / "lib" / "libtorch_cuda.so").write_bytes(lib)
            (site / "torch" / "include" / "ATen" / "ATen.h").write_text("// aten\n")
        if args[-1].startswith("import json, torch"):
            return json.dumps(["2.15.0+cu132", "13.2"])
        return PROBE

    return Recorder(answer)


def _made(tmp_path: Path, torch: str) -> envs.TorchEnv:
    return envs.torch_env(
        tmp_path, python="python3", torch=torch, cuda="cu132", index=envs.PIP_INDEX,
        log=tmp_path / "log", run=_fake_pip(b"t" * (2 * MIB)),
    )  # fmt: skip


def _sealed(tmp_path: Path) -> Path:
    env = _env(tmp_path / "env", "python3.11",
               {"torch/lib/lib.so": b"l" * MIB, "torch/include/a.h": b"// a\n"})  # fmt: skip
    envs.seal(env, envs.manifest_of(env))
    return env


def _unsealed(env: Path) -> None:
    """Its folders writable again, as a build that chmods them would make them."""
    for path in [env, *env.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)


def _rewrite(file: Path) -> None:
    """An in-place write of the same size, its mode and mtime put back."""
    before = file.stat()
    file.chmod(0o644)
    file.write_text("// b\n")
    file.chmod(0o444)
    os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns))


def _fake_clone(src: Path, dst: Path) -> bool:
    """A stand-in for FICLONE, which this machine's ext4 lacks: a copy, its own inode."""
    dst.write_bytes(src.read_bytes())
    return True


def test_identical_big_files_become_clones_and_different_ones_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib, other = b"a" * (2 * MIB), b"b" * (2 * MIB)
    first = _env(tmp_path / "cp311", "python3.11",
                 {"nvidia/cublas/lib/libcublas.so": lib, "torch/lib/libtorch.so": lib,
                  "torch/version.py": b"v"})  # fmt: skip
    new = _env(tmp_path / "cp312", "python3.12",
               {"nvidia/cublas/lib/libcublas.so": lib, "torch/lib/libtorch.so": other,
                "torch/version.py": b"v", "nvidia/only-here.so": lib})  # fmt: skip
    cloned: list[str] = []
    monkeypatch.setattr(envs, "clone", lambda s, d: cloned.append(d.name) or _fake_clone(s, d))
    assert envs.share_files(new, [first]) == 2 * MIB
    assert cloned == ["libcublas.so.wheelfarm-clone"]  # same bytes at the same place only
    site, old_site = new / "lib/python3.12/site-packages", first / "lib/python3.11/site-packages"
    cublas = site / "nvidia/cublas/lib/libcublas.so"
    assert cublas.stat().st_ino != (old_site / "nvidia/cublas/lib/libcublas.so").stat().st_ino
    assert cublas.read_bytes() == lib
    assert (site / "torch/lib/libtorch.so").read_bytes() == other  # same size, other bytes
    assert all(f.stat().st_nlink == 1 for f in site.rglob("*") if f.is_file())
    assert not list(site.rglob("*.wheelfarm-clone"))


def test_a_file_system_without_clones_keeps_the_copy(tmp_path: Path) -> None:
    """This machine's file system (ext4) has no clones: the real ioctl is refused, the copy
    stays, no part file is left."""
    lib = b"c" * (2 * MIB)
    first = _env(tmp_path / "a", "python3.11", {"nvidia/lib.so": lib})
    new = _env(tmp_path / "b", "python3.11", {"nvidia/lib.so": lib})
    twin, file = (e / "lib/python3.11/site-packages/nvidia/lib.so" for e in (first, new))
    saved = envs.share_files(new, [first])
    assert saved == (2 * MIB if envs.clones_in(tmp_path) else 0)  # btrfs, XFS clone
    assert file.read_bytes() == lib and file.stat().st_ino != twin.stat().st_ino
    assert not list(new.rglob("*.wheelfarm-clone"))


@pytest.mark.parametrize("euid", [0, 1000])
def test_envs_are_sealed_and_share_no_inode_root_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, euid: int
) -> None:
    """Issue 49 row 6: a build not root (euid 1000) may chmod a file it owns in an env and
    write it: a hard link carried that write into the linked env while another build used it.
    No env shares an inode with another, whoever runs; a write reaches its own env only."""
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    first, second = _made(tmp_path, "2.15.0"), _made(tmp_path, "2.15.1")
    inodes = [{f.stat().st_ino for f in e.path.rglob("*") if f.is_file()} for e in (first, second)]
    assert not inodes[0] & inodes[1]
    for env in (first, second):
        for path in [env.path, *env.path.rglob("*")]:
            assert not path.lstat().st_mode & 0o222, path  # files and folders read-only
        header = env.path / SITE / "torch/include/ATen/ATen.h"
        assert header.stat().st_mtime == SOURCE_DATE_EPOCH
        assert envs.manifest_of(env.path).is_file()
    lib = second.path / SITE / "torch/lib/libtorch_cuda.so"
    lib.chmod(0o644)  # its owner may, root or not
    with lib.open("r+b") as fh:
        fh.write(b"evil")
    assert (first.path / SITE / "torch/lib/libtorch_cuda.so").read_bytes() == b"t" * (2 * MIB)
    _made(tmp_path, "2.15.0")  # the other env is untouched and reused


def test_a_write_into_a_reused_env_is_refused_naming_the_file(tmp_path: Path) -> None:
    """An in-place write by the env's owner (a chmod first, the mtime put back) reaches that
    env only; its next reuse refuses it by its ctime and hash."""
    first, second = _made(tmp_path, "2.15.0"), _made(tmp_path, "2.15.1")
    lib = second.path / SITE / "torch/lib/libtorch_cuda.so"
    before = lib.stat()
    lib.chmod(0o644)
    with lib.open("r+b") as fh:
        fh.write(b"evil")
    lib.chmod(0o444)
    os.utime(lib, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(ToolchainError, match=r"torch/lib/libtorch_cuda\.so was changed .* rm -rf"):
        _made(tmp_path, "2.15.1")
    assert (first.path / SITE / "torch/lib/libtorch_cuda.so").read_bytes() == b"t" * (2 * MIB)
    _made(tmp_path, "2.15.0")  # the other env is byte-identical and reused


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        (lambda site: (site / "evil.pth").write_text("import os"), "evil.pth is not in its"),
        (lambda site: (site / "torch/include/a.h").unlink(), "a.h is missing"),
        (lambda site: _rewrite(site / "torch/include/a.h"), "a.h was changed"),
        (lambda site: (site / "torch/include/a.h").chmod(0o644), "a.h was changed"),
    ],
)
def test_check_sealed_refuses_what_the_manifest_does_not_say(
    tmp_path: Path, tamper: Callable[[Path], object], named: str
) -> None:
    env = _sealed(tmp_path)
    envs.check_sealed(env, envs.manifest_of(env))
    _unsealed(env)
    tamper(env / SITE)
    with pytest.raises(ToolchainError, match=re.escape(named)) as caught:
        envs.check_sealed(env, envs.manifest_of(env))
    assert "\n" not in str(caught.value)


def test_the_fast_path_hashes_nothing_and_a_moved_ctime_is_hashed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _sealed(tmp_path)
    os.link(env / SITE / "torch/lib/lib.so", tmp_path / "twin.so")  # a newer env's link: ctime
    hashed: list[Path] = []
    real = envs.sha256_file
    monkeypatch.setattr(envs, "sha256_file", lambda f: hashed.append(f) or real(f))
    envs.check_sealed(env, envs.manifest_of(env))
    assert hashed == [env / SITE / "torch/lib/lib.so"]  # same bytes: written back
    envs.check_sealed(env, envs.manifest_of(env))
    assert len(hashed) == 1  # the next reuse: stats only


def test_a_header_view_never_writes_the_env_and_cannot_be_written_through(
    tmp_path: Path,
) -> None:
    env = _sealed(tmp_path)
    header = env / SITE / "torch/include/a.h"
    before = header.stat()
    view = tmp_path / "work" / ccache.TORCH_VIEW
    ccache.header_view(env / SITE / "torch/include", view)
    ccache.header_view(env / SITE / "torch/include", view)  # a second build replaces it
    seen = (view / "a.h").stat()
    assert seen.st_ino != before.st_ino  # a clone or a copy, never a link
    assert not seen.st_mode & 0o222 and seen.st_mtime == SOURCE_DATE_EPOCH
    assert header.stat().st_mtime_ns == before.st_mtime_ns
    assert not header.stat().st_mode & 0o222
    (view / "a.h").chmod(0o644)  # the build owns its view: the write stays in it
    (view / "a.h").write_text("// evil\n")
    assert header.read_text() == "// a\n"
    envs.check_sealed(env, envs.manifest_of(env))  # the env is as it was made


def test_a_view_of_a_folder_no_env_sealed_is_a_read_only_copy(tmp_path: Path) -> None:
    """The Python's own headers: never a link, so a write through the view cannot reach them."""
    folder = tmp_path / "include" / "python3.11"
    folder.mkdir(parents=True)
    (folder / "Python.h").write_text("// py\n")
    before = (folder / "Python.h").stat()
    view = tmp_path / "work" / ccache.PYTHON_VIEW
    ccache.header_view(folder, view)
    seen = (view / "Python.h").stat()
    assert seen.st_ino != before.st_ino and not seen.st_mode & 0o222
    assert (folder / "Python.h").stat().st_mtime_ns == before.st_mtime_ns


def test_an_env_made_before_sealing_is_sealed_on_its_next_reuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = _made(tmp_path, "2.15.0")
    manifest = envs.manifest_of(made.path)
    manifest.unlink()
    _unsealed(made.path)
    assert _made(tmp_path, "2.15.0").path == made.path
    assert manifest.is_file() and not made.path.stat().st_mode & 0o222


@pytest.mark.parametrize("requirement", HOSTILE_REQUIREMENTS[:3])
def test_pip_never_gets_an_option_from_a_package_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, requirement: str
) -> None:
    run = Recorder()
    with pytest.raises(ConfigError, match="is an option or an editable"):
        envs.install_requirements(
            tmp_path / "py", ("numpy", requirement), log=tmp_path / "log", run=run
        )
    envs.install_requirements(tmp_path / "py", ("numpy", "scipy>=1"), log=tmp_path / "log", run=run)
    (argv,) = run.commands
    assert argv[-3:] == ["--", "numpy", "scipy>=1"]


TAG = "cp311-" + hashlib.sha256(b"/usr 3.11.2 (main)").hexdigest()[:8]


def test_only_the_torch_install_sets_the_constraints_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def answer(args: list[str]) -> str:
        if "venv" in args:
            Path(args[-1]).mkdir(parents=True)
        if args[-1].startswith("import json, torch"):
            return json.dumps(["2.15.0+cu132", "13.2"])
        return PROBE

    run = Recorder(answer)
    monkeypatch.setenv("PIP_CONSTRAINT", "/etc/xdg/pip/constraints.txt")
    made = envs.torch_env(
        tmp_path, python="python3", torch="2.15.0", cuda="cu132", index=envs.PIP_INDEX, log=tmp_path / "log",
        run=run,
    )  # fmt: skip
    calls = [
        (args, options["env"]) for args, options in zip(run.commands, run.options, strict=True)
    ]
    assert made.path == tmp_path / "envs" / f"torch2.15.0-cu132-{TAG}"
    installs = {
        next(a for a in args if "==" in a or ">=" in a): env
        for args, env in calls
        if "install" in args
    }
    assert installs["torch==2.15.0"] is not None
    assert installs["torch==2.15.0"]["PIP_CONSTRAINT"] == os.devnull
    assert installs["setuptools>=69"] is None  # pip's own configuration, constraints and all
    assert json.loads((made.path / ".complete").read_text()) == {
        "torch": "2.15.0+cu132",
        "cuda": "13.2",
    }


def test_local_builds_default_to_the_newest_torch_the_cap_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    matrix = load_matrix(REPO)
    expansion = expand(matrix)
    query = TargetQuery(local=True, cuda="cu130", python="3.11", platform="linux_x86_64")
    caps = tmp_path / "constraints.txt"
    caps.write_text(
        "torch<=2.14.1  # local copies\ntorchvision<=0.29.1\n-r other.txt\nnot a req!\n"
    )
    monkeypatch.setenv("PIP_CONSTRAINT", f"{caps} {tmp_path / 'missing.txt'}")
    assert str(envs.pip_torch_cap()) == "<=2.14.1"
    assert choose_target(matrix, expansion, query).build.torch == "2.14.1"
    cu132 = dataclasses.replace(query, cuda="cu132", torch="2.15")  # an explicit --torch: no cap
    assert choose_target(matrix, expansion, cu132).build.torch == "2.15.0"
    monkeypatch.setenv("PIP_CONSTRAINT", os.devnull)  # no cap: the newest torch PyPI has for it
    assert choose_target(matrix, expansion, dataclasses.replace(cu132, torch=None)).build.torch == (
        "2.15.0"
    )
    # PyPI's 2.15.0 is cu132, so a cu130 build from pip's own index takes 2.14.1, as CI's
    # machine (no cap) must; a stable-ABI build (xformers: torch 2.10 and up) too
    assert choose_target(matrix, expansion, query).build.torch == "2.14.1"
    stable = dataclasses.replace(query, package="xformers")
    assert choose_target(matrix, expansion, stable).build.torch == "2.14.1"
    # from a CUDA index, the newest; asked for PyPI's torch on a CUDA it lacks: one clear line
    index = dataclasses.replace(query, torch_index="https://download.pytorch.org/whl/cu130")
    assert choose_target(matrix, expansion, index).build.torch == "2.15.0"
    with pytest.raises(PlanError, match=r"2\.15\.0 is cu132\): pass --torch-index https://"):
        choose_target(matrix, expansion, dataclasses.replace(query, torch="2.15"))


def test_a_second_build_waits_for_the_env_another_is_making_and_reuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds of one torch env: the second waits on the env's lock and takes the first's
    env (one install, not two 5 GB copies); one that waits past its bound names the holder."""
    import functools
    import socket
    import threading

    from wheelfarm.core.errors import ToolchainError

    installs: list[str] = []
    entered, release = threading.Event(), threading.Event()

    def answer(args: list[str]) -> str:
        if "venv" in args:
            Path(args[-1]).mkdir(parents=True)
        if "install" in args and "torch==2.14.1" in args:
            installs.append(args[0])
            entered.set()
            release.wait(10)
        if args[-1].startswith("import json, torch"):
            return json.dumps(["2.14.1+cu130", "13.0"])
        return PROBE

    make = functools.partial(envs.torch_env, tmp_path, python="python3", torch="2.14.1",
                             cuda="cu130", index=envs.PIP_INDEX, log=tmp_path / "log",
                             run=Recorder(answer))  # fmt: skip
    made: list[Path] = []
    first = threading.Thread(target=lambda: made.append(make().path))
    first.start()
    assert entered.wait(10)
    monkeypatch.setattr(envs, "ENV_LOCK_TIMEOUT", 0.3)
    with pytest.raises(ToolchainError) as caught:
        make()
    (line,) = str(caught.value).splitlines()
    assert f"held by pid {os.getpid()} on {socket.gethostname()}" in line
    assert f"torch2.14.1-cu130-{TAG}" in line and "waited 0.3 s" in line
    monkeypatch.setattr(envs, "ENV_LOCK_TIMEOUT", 10.0)
    second = threading.Thread(target=lambda: made.append(make().path))
    second.start()
    release.set()
    first.join(10)
    second.join(10)
    assert made == [tmp_path / "envs" / f"torch2.14.1-cu130-{TAG}"] * 2
    assert len(installs) == 1
    assert sorted(p.name for p in (tmp_path / "envs").iterdir()) == [
        ".torch2.14.1-cu130-cp311-269b5052.lock",
        f".torch2.14.1-cu130-{TAG}.manifest.json",  # beside the sealed env (issue 36)
        f"torch2.14.1-cu130-{TAG}",
    ]
