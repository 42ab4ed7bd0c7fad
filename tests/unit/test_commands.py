"""The install commands the farm prints: pinned to the farm's full local version, uv on an
explicit index, PyTorch's index for the wheel's CUDA beside the farm's (README, "Install
commands"; docs/install.md)."""

from __future__ import annotations

import shlex
from pathlib import Path

from wheelfarm.core.commands import hash_commands, install_commands, uv_project

README = Path(__file__).parents[2] / "README.md"


INDEX = "https://OWNER.github.io/REPO/cu130/torch2.14/"
TORCH = "https://download.pytorch.org/whl/cu130"
VERSION = "2.8.3.post2+cu130torch2.14"


def test_pip_pins_the_full_local_version_and_takes_torch_from_pytorchs_index() -> None:
    pip = shlex.split(install_commands("flash-attn", VERSION, INDEX, TORCH).pip)
    assert pip == ["pip", "install", f"flash-attn=={VERSION}", "--extra-index-url", INDEX,
                   "--extra-index-url", TORCH]  # fmt: skip


def test_uv_names_the_farm_index_then_pytorchs() -> None:
    uv = shlex.split(install_commands("flash-attn", VERSION, INDEX, TORCH).uv)
    assert uv == ["uv", "pip", "install", f"flash-attn=={VERSION}", "--index", INDEX, "--index",
                  TORCH]  # fmt: skip


def test_a_torch_free_wheel_names_no_torch_index() -> None:
    commands = install_commands("pycuda", "2026.1+cu130", INDEX)
    assert "pytorch" not in commands.pip + commands.uv


def test_an_interpreter_runs_its_own_pip() -> None:
    """ComfyUI portable: the embedded interpreter's pip, uv pointed at it."""
    py = "python_embeded\\python.exe"
    commands = install_commands("flash-attn", VERSION, INDEX, TORCH, python=py)
    assert commands.pip.startswith(f"{py} -m pip install ")
    assert commands.uv.startswith(f"uv pip install --python {py} ")
    assert install_commands("x", "1+cu130", INDEX, python="my env/py").pip.startswith("'my env/py'")


def test_the_uv_project_takes_torch_from_pytorchs_index_on_every_platform() -> None:
    text = uv_project("flash-attn", VERSION, INDEX, ("cu130", "2.14"), TORCH)
    assert f'dependencies = ["flash-attn=={VERSION}", "torch==2.14.*"]' in text
    assert f'name = "pytorch-cu130"\nurl = "{TORCH}"\nexplicit = true' in text
    assert 'torch = { index = "pytorch-cu130" }' in text
    assert 'flash-attn = { index = "wheelfarm-cu130-torch2.14" }' in text
    assert "pytorch" not in uv_project("pycuda", "2026.1+cu130", INDEX, ("cu130", "2.14"))


def test_hash_mode_locks_every_requirement_with_its_index() -> None:
    text = hash_commands("flash-attn", VERSION, INDEX, TORCH)
    assert f"--generate-hashes --emit-index-url --index {INDEX} --index {TORCH}" in text
    assert text.endswith("pip install --require-hashes -r requirements.txt")


def test_readme_headline_is_the_printed_commands() -> None:
    """README's first commands are exactly what the farm prints for that wheel."""
    commands = install_commands("flash-attn", VERSION, INDEX, TORCH)
    text = README.read_text(encoding="utf-8")
    head = text[: text.index("## Quick start")]
    assert f"\n{commands.pip}\n{commands.uv}\n" in head
