"""The install commands the farm prints (the `farm` command, `index`, `request` and doctor; README,
the docs and the landing page say the same): each takes the farm's wheel or fails, even on the
day PyPI holds a newer release of the same name, and none can swap the user's torch for another
build (docs/install.md, "The printed commands").

- The package is pinned to its full local version (`NAME==V+label`): only the farm holds it,
  where `--only-binary` would still take a newer PyPI wheel.
- A wheel built for a torch also names PyTorch's index for its CUDA. Where the installed torch
  meets the wheel's `torch>=M.m,<M.(m+1)` nothing about torch moves (pip and uv keep what
  satisfies); where it does not, or there is none, torch comes from PyTorch's index for that
  CUDA (its `+cu130` build sorts above PyPI's plain one, which on Windows is the CPU build),
  never PyPI's."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

# Outside a venv, `uv pip install` stops ("No virtual environment found"); `--system` would
# install into the base interpreter even when a venv's python is first on PATH, so the farm
# prints the command for a venv and says how to make one.
UV_OUTSIDE_A_VENV = "uv pip installs into a venv: outside one, run `uv venv` first"
# What the printed commands do to a torch that does not fit (README and the page say it too).
TORCH_NOTE = (
    "where torch is not {torch}.x (or there is none), this installs PyTorch's {cuda} build of "
    "torch {torch}; to keep your torch, use the commands of its own cell"
)


@dataclass(frozen=True)
class _InstallCommands:
    pip: str
    uv: str


def install_commands(
    name: str, version: str, index: str, torch: str | None = None, *, python: str | None = None
) -> _InstallCommands:
    """The pip and uv commands for one farm wheel: `version` is its full local version, `index`
    the cell's farm index, `torch` PyTorch's index for the wheel's CUDA (`Matrix.torch_index`;
    None for a torch-free wheel: it declares no torch). pip takes the farm's and PyTorch's
    indexes as extra ones (the highest version wins: the farm's pin, PyTorch's `+cuXYZ`
    torch); uv asks them in order before PyPI (`--index`). `python`: pip run by that
    interpreter (`PY -m pip`), uv pointed at it (`--python PY`), as for ComfyUI's embedded
    Python."""
    spec = f'"{name}=={version}"'
    pip_extra = f" --extra-index-url {index}" + (f" --extra-index-url {torch}" if torch else "")
    uv_extra = f" --index {index}" + (f" --index {torch}" if torch else "")
    pip = f"{shell_word(python)} -m pip" if python else "pip"
    uv_python = f" --python {shell_word(python)}" if python else ""
    return _InstallCommands(
        pip=f"{pip} install {spec}{pip_extra}", uv=f"uv pip install{uv_python} {spec}{uv_extra}"
    )


def shell_word(path: str) -> str:
    """A path as a shell word: left alone when plain (a Windows path's backslashes included)."""
    plain = all(c.isalnum() or c in "/\\._-:" for c in path)
    return path if plain else shlex.quote(path)


def uv_project(
    name: str, version: str, index: str, cell: tuple[str, str], torch: str | None = None
) -> str:
    """The pyproject.toml lines that pin the wheel to the farm's index and torch to PyTorch's
    index for the same CUDA (both `explicit`: nothing else is looked up there), so `uv lock`
    gives every platform's torch that CUDA (Windows' PyPI torch is the CPU build). `cell` is
    (cuda, torch minor); `torch` None for a torch-free wheel."""
    cuda, minor = cell
    farm = f"wheelfarm-{cuda}-torch{minor}"
    deps = [f'"{name}=={version}"'] + ([f'"torch=={minor}.*"'] if torch else [])
    lines = [
        "[project]",
        f"dependencies = [{', '.join(deps)}]",
        "",
        "[[tool.uv.index]]",
        f'name = "{farm}"',
        f'url = "{index}"',
        "explicit = true",
    ]
    if torch:
        lines += ["", "[[tool.uv.index]]", f'name = "pytorch-{cuda}"', f'url = "{torch}"']
        lines += ["explicit = true"]
    lines += ["", "[tool.uv.sources]", f'{name} = {{ index = "{farm}" }}']
    if torch:
        lines.append(f'torch = {{ index = "pytorch-{cuda}" }}')
    return "\n".join(lines)


def hash_commands(name: str, version: str, index: str, torch: str | None = None) -> str:
    """Hash mode that works in a fresh venv: uv locks the wheel and everything it requires,
    torch from PyTorch's index included, each with its sha256 and the indexes written into the
    file (`--emit-index-url`); pip then installs that file and refuses any other bytes. One
    wheel's hash alone cannot do it: `--require-hashes` wants every requirement pinned."""
    extra = f" --index {index}" + (f" --index {torch}" if torch else "")
    return (
        f"# requirements.in holds the line {name}=={version}\n"
        f"uv pip compile requirements.in --generate-hashes --emit-index-url{extra} "
        f"-o requirements.txt\n"
        "pip install --require-hashes -r requirements.txt"
    )
