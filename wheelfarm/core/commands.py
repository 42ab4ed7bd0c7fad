"""The install commands the farm prints (the `farm` command; README and the landing page say the
same): each takes the farm's wheel or fails, even on the day PyPI holds a newer release of the
same name (README, "Install commands")."""

from __future__ import annotations

from dataclasses import dataclass

# Outside a venv, `uv pip install` stops ("No virtual environment found"); `--system` would
# install into the base interpreter even when a venv's python is first on PATH, so the farm
# prints the command for a venv and says how to make one.
UV_OUTSIDE_A_VENV = "uv pip installs into a venv: outside one, run `uv venv` first"


@dataclass(frozen=True)
class InstallCommands:
    pip: str
    uv: str


def install_commands(name: str, version: str, index: str) -> InstallCommands:
    """The pip command pins the full local version (`NAME==V+label`: only the farm can satisfy it,
    where `--only-binary` would still take a newer PyPI wheel); uv names the farm's index with
    `--index`, which uv asks before PyPI, and pins the same version."""
    spec = f'"{name}=={version}"'
    return InstallCommands(
        pip=f"pip install {spec} --extra-index-url {index}",
        uv=f"uv pip install {spec} --index {index}",
    )
