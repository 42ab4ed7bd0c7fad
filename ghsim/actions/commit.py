"""The tree actions/checkout gives a job, and the interpreter actions/setup-python puts on its
PATH.

On GitHub every job's checkout is a fresh clone at the run's commit: the tracked files, never
what a developer's checkout ignores (`.venv/`, `site/`, `wheelhouse/`, `.wheelfarm/`), and a job
writes only into its own copy. The model exports the commit once per replay, into its work
folder: the files git lists in the replayed repository, with the untracked ones its .gitignore
does not ignore (what `git add -A` would commit: the model reads the workflows from the working
tree, so the jobs see the tree those workflows came from). Each job's workspace gets a copy of
that export, so a job that rewrites a file (watch.yml's `wheelfarm watch --write`) changes only
its own. A folder outside git (a test's hand-made repository) is its own commit, taken whole; one
holding a .gitignore that is no git checkout is refused, as what it ignores cannot be told from
what it tracks. Not modelled: `.git` itself.

setup-python puts its interpreter's bin folder first on the job's PATH, and `pip install .`
puts `wheelfarm` there. The model's interpreter is the one running it (`sys.executable`, which
imported wheelfarm to get here): a folder in the model's work holds `python`, `python3` and
`wheelfarm` that run it, checked once, so a replay run with any interpreter works, inside a
checkout with `.venv/` or not, or stops before its first job with one line."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ghsim.actions.model import Model


class SetupError(RuntimeError):
    """The model cannot give its jobs a checkout or an interpreter: one line says why."""


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    except FileNotFoundError:
        return None


def listed(repo: Path) -> list[str]:
    """The files of `repo`'s commit, relative to it (see the module's docstring)."""
    top = _git(repo, "rev-parse", "--show-toplevel")
    if (
        top is not None
        and top.returncode == 0
        and Path(top.stdout.decode().strip()) == repo.resolve()
    ):
        found = _git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
        assert found is not None
        if found.returncode != 0:
            msg = f"git ls-files in {repo} failed: {found.stderr.decode().strip()}"
            raise SetupError(msg)
        names = {n for n in found.stdout.decode().split("\0") if n}
        # a tracked file deleted in the working tree is not in the next commit
        return sorted(n for n in names if (repo / n).is_file() or (repo / n).is_symlink())
    if (repo / ".gitignore").exists():
        why = "git is not installed" if top is None else "it is not a git checkout"
        msg = (
            f"{repo}: {why}, so the model cannot tell its tracked files from what .gitignore "
            "ignores (site/, wheelhouse/, .venv/): run it from a git clone"
        )
        raise SetupError(msg)
    return sorted(
        str(p.relative_to(repo)) for p in repo.rglob("*") if p.is_file() or p.is_symlink()
    )


def export(repo: Path, dest: Path) -> Path:
    """The commit of `repo` copied into `dest` (made once; later calls find it)."""
    if dest.is_dir():
        return dest
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    for name in listed(repo):
        source, target = repo / name, partial / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(source.readlink())
        else:
            shutil.copy(source, target)  # contents and mode, not the source's inode
    partial.mkdir(parents=True, exist_ok=True)
    partial.rename(dest)
    return dest


def check_out(commit: Path, workspace: Path) -> None:
    """A job's own copy of the exported commit."""
    shutil.copytree(commit, workspace, symlinks=True, dirs_exist_ok=True, copy_function=shutil.copy)


def interpreter(folder: Path, env: dict[str, str]) -> Path:
    """The bin folder setup-python's stand-in puts on a job's PATH (made and checked once):
    `python`, `python3` and `wheelfarm`, each running this interpreter."""
    if folder.is_dir():
        return folder
    partial = folder.with_name(folder.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    python = shlex.quote(sys.executable)
    scripts = {
        "python": f'exec {python} "$@"',
        "python3": f'exec {python} "$@"',
        "wheelfarm": f'exec {python} -m wheelfarm "$@"',
    }
    for name, line in scripts.items():
        (partial / name).write_text(f"#!/bin/sh\n{line}\n", encoding="utf-8")
        (partial / name).chmod(0o755)
    path = os.pathsep.join([str(partial), env.get("PATH", os.environ.get("PATH", ""))])
    ran = subprocess.run(
        [str(partial / "wheelfarm"), "--version"],
        env={**env, "PATH": path},
        capture_output=True,
        text=True,
        check=False,
    )
    if ran.returncode != 0:
        last = (ran.stderr.strip().splitlines() or [f"exit {ran.returncode}"])[-1]
        msg = (
            f"the modelled jobs run wheelfarm with {sys.executable}, which cannot ({last}): "
            "run with the checkout's .venv/bin/python after `pip install -e '.[build,test]'`"
        )
        raise SetupError(msg)
    partial.rename(folder)
    return folder


def tools(model: Model) -> Path:
    """The model's interpreter folder (see `interpreter`), the same for each of its jobs."""
    return interpreter(model.work / "toolcache" / "bin", model.base_env)
