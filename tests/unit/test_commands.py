"""The install commands the farm prints: pinned to the farm's full local version, uv on an
explicit index (README, "Install commands")."""

from __future__ import annotations

import shlex
from pathlib import Path

from wheelfarm.core.commands import install_commands

README = Path(__file__).parents[2] / "README.md"


INDEX = "https://OWNER.github.io/REPO/cu130/torch2.14/"


def test_pip_pins_the_full_local_version() -> None:
    pip = shlex.split(install_commands("flash-attn", "2.8.3+cu130torch2.14", INDEX).pip)
    assert pip == ["pip", "install", "flash-attn==2.8.3+cu130torch2.14", "--extra-index-url", INDEX]


def test_uv_names_the_farm_index_explicitly() -> None:
    uv = shlex.split(install_commands("flash-attn", "2.8.3+cu130torch2.14", INDEX).uv)
    assert uv == ["uv", "pip", "install", "flash-attn==2.8.3+cu130torch2.14", "--index", INDEX]


def test_readme_headline_is_the_printed_commands() -> None:
    """README's first commands are exactly what `wheelfarm farm` prints for that wheel."""
    commands = install_commands("flash-attn", "2.8.3+cu130torch2.14", INDEX)
    text = README.read_text(encoding="utf-8")
    head = text[: text.index("## Quick start")]
    assert f"\n{commands.pip}\n{commands.uv}\n" in head
