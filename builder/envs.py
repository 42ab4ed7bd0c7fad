"""Python environments for builds and import checks.

A torch environment (a venv with the target's exact torch) is slow to make (40 s, 5 GB), so it is
made once per (torch, CUDA, Python) under the cache and shared. Each build or check then gets a
fresh, thin venv that sees the shared torch through a .pth file: nothing it installs leaks back.
Envs share no inode, root or not: an owner may chmod and write any file it owns, so a hard link
would carry one build's write into another env a second build is using at that moment. Where the
file system clones (copy-on-write: btrfs, XFS), a big file byte-identical to one of the cache's
other torch envs becomes a clone of it (its blocks shared, its inode its own: a group job's five
Pythons keep one copy of the nvidia-* libraries' bytes); elsewhere it stays a copy.
A finished env is sealed (`seal`): every file and folder read-only, its headers at one mtime, and
a manifest beside it of each file's size, times and sha256 that each reuse checks
(`check_sealed`): a write reaches one env only, and its next reuse refuses it.
"""

from __future__ import annotations

import filecmp
import functools
import hashlib
import json
import os
import shutil
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet

from wheelfarm.builder.platforms import current
from wheelfarm.core.digest import sha256_file
from wheelfarm.core.errors import ConfigError, ToolchainError
from wheelfarm.core.lock import exclusive
from wheelfarm.core.proc import Runner, call
from wheelfarm.core.wheelfile import SOURCE_DATE_EPOCH
from wheelfarm.matrix.load import requirement_problem

PIP_INDEX = "pip"  # torch index value meaning "pip's own configuration (or a mirror) decides"
ENV_LOCK_TIMEOUT = 1800.0  # seconds a second build waits for a torch env another is making
# An interpreter's minor (the env's cpXY) and what tells two installs of it apart: the base
# install it runs from and its full version.
IDENTITY_PROGRAM = "import sys; print('%d%d' % sys.version_info[:2], sys.base_prefix, sys.version)"
SHARED_FILE_BYTES = 1 << 20  # a file this big is worth a clone (torch's and nvidia's libraries)
FICLONE = 0x40049409  # Linux's ioctl: dst shares src's blocks, copy-on-write (ioctl_ficlone(2))
WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


def default_cache() -> Path:
    return Path(os.environ.get("WHEELFARM_CACHE", Path.home() / ".cache" / "wheelfarm"))


def site_packages(python: Path, *, run: Runner = call) -> Path:
    return _sysconfig_path(python, "purelib", run)


def python_include(python: Path, *, run: Runner = call) -> Path:
    """The folder of Python.h that torch's cpp_extension puts on every compile's command line."""
    return _sysconfig_path(python, "include", run)


def _sysconfig_path(python: Path, name: str, run: Runner) -> Path:
    program = f"import sysconfig; print(sysconfig.get_paths()[{name!r}])"
    return Path(run([python, "-c", program], capture=True).strip())


@dataclass(frozen=True)
class TorchEnv:
    """A shared venv holding one torch build."""

    path: Path
    torch: str
    cuda: str
    index: str = PIP_INDEX  # where its torch came from: the index of the matching torchvision

    @property
    def python(self) -> Path:
        return current().venv_python(self.path)


def clone(src: Path, dst: Path) -> bool:
    """Make `dst` (new) a copy-on-write clone of `src`: its own inode, their blocks shared until
    either is written. False, and no `dst`, where the file system or platform cannot."""
    if sys.platform == "win32":
        return False
    import fcntl  # noqa: PLC0415 (POSIX only)

    try:
        with src.open("rb") as source, dst.open("xb") as target:
            fcntl.ioctl(target.fileno(), FICLONE, source.fileno())
    except OSError:
        dst.unlink(missing_ok=True)
        return False
    return True


def manifest_of(env: Path) -> Path:
    """Where an env's manifest lives: beside it (hidden, as its lock), outside what it seals."""
    return env.with_name(f".{env.name}.manifest.json")


def torch_env(
    cache: Path, *, python: str, torch: str, cuda: str, index: str, log: Path, run: Runner = call
) -> TorchEnv:
    """Make (once) or reuse the venv with torch==`torch` for `cuda`; check what pip installed.
    One env per interpreter (its version and install), not per cpXY tag: a second CPython of
    the same minor has its own headers, which a build must compile against (ADR 16)."""
    version, identity = run([python, "-c", IDENTITY_PROGRAM], capture=True).split(maxsplit=1)
    digest = hashlib.sha256(identity.strip().encode()).hexdigest()[:8]
    path = cache / "envs" / f"torch{torch}-{cuda}-cp{version}-{digest}"
    if not (path / ".complete").is_file() or not manifest_of(path).is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = path.with_name(f".{path.name}.lock")  # hidden: no glob of envs meets it

        def cannot_open(exc: OSError) -> ToolchainError:
            return ToolchainError(f"cannot open {str(lock)!r} ({exc.strerror}); fix --cache")

        def busy(holder: str) -> ToolchainError:
            return ToolchainError(
                f"the torch environment {str(path)!r} is being made by another build ({holder}); "
                f"waited {ENV_LOCK_TIMEOUT:g} s: let it finish, then run again"
            )

        # one maker at a time: a second build of the same env waits and then reuses it, instead
        # of installing its own 5 GB copy beside the first and throwing it away
        with exclusive(lock, ENV_LOCK_TIMEOUT, cannot_open=cannot_open, busy=busy):
            if not (path / ".complete").is_file():
                _make_torch_env(
                    path, python=python, torch=torch, cuda=cuda, index=index, log=log, run=run
                )
            elif not manifest_of(path).is_file():  # made before envs were sealed: seal it now
                seal(path, manifest_of(path))
    check_sealed(path, manifest_of(path))
    return TorchEnv(path, torch, cuda, index)


def _make_torch_env(
    path: Path, *, python: str, torch: str, cuda: str, index: str, log: Path, run: Runner
) -> None:
    """Install torch==`torch` into a fresh venv beside `path`, check its CUDA, then rename it into
    place: a crash leaves only a partial folder, never a `path` that looks complete."""
    partial = path.with_name(path.name + f".partial-{os.getpid()}")
    partial_python = current().venv_python(partial)
    shutil.rmtree(partial, ignore_errors=True)
    run([python, "-m", "venv", partial], log=log)
    source = [] if index == PIP_INDEX else ["--index-url", index]
    # torch alone from its index (its nvidia-* deps live there too), then build tools from
    # pip's own configuration: a CUDA index need not carry setuptools or ninja. The exact pin is
    # the environment's whole point, so a machine-wide constraint file (one that caps torch at
    # an older release) is set aside for this one install.
    pip_install(partial_python, f"torch=={torch}", *source, log=log, unconstrained=True, run=run)
    pip_install(partial_python, "setuptools>=69", "wheel", "ninja", "numpy", log=log, run=run)
    report = json.loads(
        run(
            [
                partial_python,
                "-c",
                "import json, torch; print(json.dumps([torch.__version__, torch.version.cuda]))",
            ],
            capture=True,
            log=None,
        ).strip()
    )
    want = f"{cuda[2:-1]}.{cuda[-1]}"
    if report[1] is None or report[1] != want:
        shutil.rmtree(partial, ignore_errors=True)
        msg = (
            f"the torch index {index!r} gave torch {report[0]} (CUDA {report[1]}), but the "
            f"target needs CUDA {want}: pass --torch-index with a {cuda} index, or build for "
            f"the CUDA it gave (--cuda) or another torch (--torch)"
        )
        raise ToolchainError(msg)
    done = [p for p in path.parent.iterdir() if (p / ".complete").is_file()]
    saved = share_files(partial, done) if done and clones_in(partial) else 0  # ext4: no reads
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"wheelfarm: {saved / 2**30:.2f} GiB cloned from the cache's other torch envs\n")
    (partial / ".complete").write_text(json.dumps({"torch": report[0], "cuda": report[1]}))
    seal(partial, manifest_of(path))
    shutil.rmtree(path, ignore_errors=True)  # an incomplete folder an older wheelfarm left
    partial.rename(path)


def _walk(env: Path) -> Iterator[tuple[str, Path]]:
    """(path relative to `env`, path) of each file and symlink of an env."""
    for root, _, names in os.walk(env):
        for name in names:
            file = Path(root, name)
            yield file.relative_to(env).as_posix(), file


def _fingerprint(file: Path) -> list[object]:
    """What the manifest keeps of one entry: [size, mtime_ns, ctime_ns, sha256] (no process
    sets a ctime: any write or chmod moves it), or ['link', target]."""
    info = file.lstat()
    if stat.S_ISLNK(info.st_mode):
        return ["link", str(file.readlink())]
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, sha256_file(file)]


def _write_manifest(manifest: Path, files: dict[str, list[object]]) -> None:
    part = manifest.with_name(f"{manifest.name}.{os.getpid()}")
    part.write_text(json.dumps({"files": files}), encoding="utf-8")
    part.replace(manifest)


def seal(env: Path, manifest: Path) -> None:
    """Make a finished env read-only and write its manifest. Headers (files under an `include`
    folder) get SOURCE_DATE_EPOCH first, so a header view can link them without touching their
    time (ccache.header_view). A link shared with another sealed env is already so: its time
    and mode stay as they are."""
    for rel, file in _walk(env):
        info = file.lstat()
        if stat.S_ISREG(info.st_mode):
            header = "include" in rel.split("/")[:-1]
            if header and info.st_mtime_ns != SOURCE_DATE_EPOCH * 10**9:
                os.utime(file, (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH))
            if info.st_mode & WRITE_BITS:
                file.chmod(stat.S_IMODE(info.st_mode) & ~WRITE_BITS)
    for root, _, _ in os.walk(env):  # folders: no file is added, removed or renamed
        Path(root).chmod(stat.S_IMODE(Path(root).stat().st_mode) & ~WRITE_BITS)
    _write_manifest(manifest, {rel: _fingerprint(file) for rel, file in _walk(env)})


def check_sealed(env: Path, manifest: Path) -> None:
    """Refuse an env whose files are not what its manifest says. Cheap on the fast path: one
    lstat a file (size, mtime, ctime, no write bit); a file whose stat differs is hashed, and
    one whose bytes still match (its ctime moved because a newer env linked it) is written
    back to the manifest; a file the manifest lacks (a .pth dropped in), or one missing, is
    refused outright."""
    try:
        listed = json.loads(manifest.read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        msg = f"torch env {str(env)!r}: its manifest is unreadable ({exc}); {_remake(env)}"
        raise ToolchainError(msg) from exc
    found = dict(_walk(env))
    for rel in sorted(set(found) ^ set(listed)):
        state = "is not in its manifest" if rel in found else "is missing"
        msg = f"torch env {str(env)!r}: {rel} {state}; {_remake(env)}"
        raise ToolchainError(msg)
    moved = {}
    for rel, want in listed.items():
        info = found[rel].lstat()
        link = stat.S_ISLNK(info.st_mode)
        if not link and [info.st_size, info.st_mtime_ns, info.st_ctime_ns] == want[:3]:
            continue  # the fast path
        now = _fingerprint(found[rel])  # size and hash (or 'link' and target) must match
        if (info.st_mode & WRITE_BITS and not link) or (now[0], now[-1]) != (want[0], want[-1]):
            msg = f"torch env {str(env)!r}: {rel} was changed after it was made; {_remake(env)}"
            raise ToolchainError(msg)
        moved[rel] = now
    if moved:
        _write_manifest(manifest, {**listed, **moved})


def _remake(env: Path) -> str:
    return f"remove it (chmod -R u+w {str(env)!r}; rm -rf it) and build again to make it anew"


def clones_in(folder: Path) -> bool:
    """Whether the file system of `folder` makes clones (one probe file, removed)."""
    probe = folder / ".wheelfarm-clone-probe"
    probe.write_bytes(b"x")
    try:
        made = clone(probe, probe.with_name(probe.name + "-2"))
        probe.with_name(probe.name + "-2").unlink(missing_ok=True)
    finally:
        probe.unlink()
    return made


def share_files(env: Path, others: list[Path]) -> int:
    """Replace each big file of `env` by a clone of a byte-identical file at the same place in
    another finished env's site-packages; return the bytes whose blocks are now shared. Never a
    hard link (see the module's docstring). A file system without clones keeps the copy."""
    have: dict[tuple[tuple[str, ...], int], list[Path]] = {}
    for other in others:
        for key, size, file in _site_files(other):
            have.setdefault((key, size), []).append(file)
    saved = 0
    for key, size, file in _site_files(env):
        if any(_clone_of(twin, file) for twin in have.get((key, size), [])):
            saved += size
    return saved


def _clone_of(twin: Path, file: Path) -> bool:
    """Make `file` a clone of `twin` if their bytes are the same; False if not, or if the file
    system cannot (the copy stays)."""
    part = file.with_name(file.name + ".wheelfarm-clone")
    try:
        if not filecmp.cmp(twin, file, shallow=False) or not clone(twin, part):
            return False
        part.chmod(stat.S_IMODE(file.stat().st_mode))
        part.replace(file)
    except OSError:
        part.unlink(missing_ok=True)
        return False
    return True


def _site_files(env: Path) -> Iterator[tuple[tuple[str, ...], int, Path]]:
    """(path under site-packages, size, file) for each regular file of `env` worth sharing: the
    same wheel installs at the same place under every Python's site-packages."""
    for root, _, names in os.walk(env):
        parts = Path(root).relative_to(env).parts
        if "site-packages" not in parts:
            continue
        under = parts[parts.index("site-packages") + 1 :]
        for name in names:
            file = Path(root, name)
            info = file.lstat()
            if stat.S_ISREG(info.st_mode) and info.st_size >= SHARED_FILE_BYTES:
                yield (*under, name), info.st_size, file


def _constraint_files() -> list[str]:
    """The constraint files pip's configuration names (PIP_CONSTRAINT wins over pip.conf)."""
    if "PIP_CONSTRAINT" in os.environ:
        return os.environ["PIP_CONSTRAINT"].split()
    return list(_configured_constraints())


@functools.cache
def _configured_constraints() -> tuple[str, ...]:
    """pip.conf's constraint files, asked of `pip config list` once per process: choosing one
    target asks for the torch cap up to three times (the build, its env, its import check)."""
    listing = call([sys.executable, "-m", "pip", "config", "list"], capture=True, log=None)
    out: list[str] = []
    for line in listing.splitlines():
        key, _, value = line.partition("=")
        if key.strip().endswith(".constraint"):
            out += value.strip().strip("'\"").split()
    return tuple(out)


def pip_torch_cap() -> SpecifierSet:
    """The torch versions pip's configured constraint files allow (all when they name none).
    `build --local` defaults to the newest torch of these, so a machine whose pip caps torch
    at the releases it holds builds against one of them; `--torch` asks for any other."""
    cap = SpecifierSet()
    for name in _constraint_files():
        try:
            lines = Path(name).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue  # pip itself reports a constraint file it cannot read
        for line in lines:
            try:
                req = Requirement(line.split("#", 1)[0].strip())
            except InvalidRequirement:
                continue
            if req.name.lower() == "torch":
                cap &= req.specifier
    return cap


def pip_install(
    python: Path, *args: str | Path, log: Path, unconstrained: bool = False, run: Runner = call
) -> None:
    """`python -m pip install --quiet ...` into one venv, logged; `unconstrained`: without the
    constraint files pip's configuration names (PIP_CONSTRAINT wins over pip.conf, and an empty
    value does not count, so it names the empty file)."""
    env = {**os.environ, "PIP_CONSTRAINT": os.devnull} if unconstrained else None
    argv = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args]
    run(argv, log=log, env=env)


def install_requirements(
    python: Path,
    requirements: tuple[str, ...],
    *,
    log: Path,
    options: tuple[str, ...] = (),
    run: Runner = call,
) -> None:
    """A package's own requirements (build_requires, import_requires) into one venv, with pip
    `options` of the farm's own (importcheck.torch_pin). They come from YAML: each must be a plain
    requirement (the loader checks it too), and they go after `--`, so none can be read as one
    of pip's options."""
    for text in requirements:
        if problem := requirement_problem(text):
            msg = f"requirement {text[:80]!r} is {problem}: give a name with an optional version"
            raise ConfigError([msg])
    pip_install(python, *options, "--", *requirements, log=log, run=run)


def overlay(
    base: TorchEnv | None, dest: Path, *, python: str, log: Path, run: Runner = call
) -> Path:
    """A fresh venv at `dest` that also sees `base`'s packages (torch) through a .pth file."""
    shutil.rmtree(dest, ignore_errors=True)
    interpreter = str(base.python) if base is not None else python
    run([interpreter, "-m", "venv", dest], log=log)
    if base is not None:
        own = site_packages(current().venv_python(dest), run=run)
        torch_site = site_packages(base.python, run=run)
        (own / "_wheelfarm_torch_env.pth").write_text(f"{torch_site}\n")
    return current().venv_python(dest)
