"""The layers import only in the directions docs/adr/0008-layers.md allows: read every module's
import statements (module-level and inside functions) and check each against the table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
# layer -> the source folder it is installed from
FOLDERS = {
    "core": ROOT / "wheelfarm" / "core",
    "matrix": ROOT / "matrix",
    "builder": ROOT / "builder",
    "index": ROOT / "index",
    "github": ROOT / "wheelfarm" / "github",
    "app": ROOT / "wheelfarm",  # farm.py, __main__.py, cli/ (not core/ or github/)
}
CLI = ROOT / "wheelfarm" / "cli"  # the one package that prints
# The standalone install helper imports only the standard library, so every layer may import
# the arch rule it holds (tests/unit/test_wheelfarm_install.py checks that it stays so).
HELPER = "wheelfarm.scripts.wheelfarm_install"
ALLOWED = {
    "core": {"core"},
    "matrix": {"core", "matrix"},
    "builder": {"core", "matrix", "builder"},
    "index": {"core", "matrix", "index"},
    "github": {"core", "matrix", "index", "github"},
    "app": {"core", "matrix", "builder", "index", "github", "app"},
}


def _layer_of(module: str) -> str | None:
    """'wheelfarm.core.http' -> 'core'; 'wheelfarm.farm' -> 'app'; other packages -> None."""
    parts = module.split(".")
    if parts[0] != "wheelfarm":
        return None
    if len(parts) == 1:
        return "app"  # `from wheelfarm import __version__`: the package's own metadata
    return parts[1] if parts[1] in FOLDERS else "app"


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
    return out


def _modules() -> list[tuple[str, Path]]:
    found = []
    for layer, folder in FOLDERS.items():
        files = (
            [*folder.glob("*.py"), *CLI.glob("*.py")] if layer == "app" else folder.rglob("*.py")
        )
        found += [(layer, f) for f in sorted(files)]
    return found


def _id(value: str | Path) -> str:
    """A path's id is relative to the repository root: the same ids in any checkout folder."""
    return value.relative_to(ROOT).as_posix() if isinstance(value, Path) else value


@pytest.mark.parametrize(("layer", "path"), _modules(), ids=_id)
def test_imports_follow_the_layers(layer: str, path: Path) -> None:
    bad = []
    for line, module in _imports(path):
        target = _layer_of(module)
        # `from wheelfarm import __version__` is metadata every layer may read
        if target is None or module in ("wheelfarm", HELPER):
            continue
        if target not in ALLOWED[layer]:
            bad.append(f"{path.name}:{line} imports {module} ({layer} -> {target})")
    assert not bad, "; ".join(bad)


def test_the_check_sees_every_layer_and_catches_a_wrong_direction(tmp_path: Path) -> None:
    layers = {layer for layer, _ in _modules()}
    assert layers == set(FOLDERS)
    bad = tmp_path / "x.py"
    bad.write_text("def f():\n    from wheelfarm.builder.build import run_build\n")
    assert _imports(bad) == [(2, "wheelfarm.builder.build")]
    assert _layer_of("wheelfarm.builder.build") not in ALLOWED["index"]


def test_no_library_module_prints() -> None:
    """Library code logs; only the CLI prints."""
    offenders = [
        f"{layer}:{path.name}:{node.lineno}"
        for layer, path in _modules()
        if path.parent != CLI
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print"
    ]
    assert not offenders, offenders


def test_each_subpackage_states_its_face_and_each_name_is_a_module_of_it() -> None:
    """Issue 53: every subpackage's __init__.py lists its face in __all__ (pypa/build's pattern),
    and each name there is one of its modules."""
    import importlib

    for package in ("builder", "matrix", "index", "core", "github"):
        module = importlib.import_module(f"wheelfarm.{package}")
        face = module.__all__
        assert face and face == sorted(face), package
        for name in face:
            importlib.import_module(f"wheelfarm.{package}.{name}")


def _words(path: Path) -> set[str]:
    return set(re.findall(r"\w+", path.read_text(encoding="utf-8")))


def test_a_public_name_is_one_another_file_uses() -> None:
    """Issue 53: a module's top-level function or class that no other file names (code, tests,
    benchmarks, the workflows, pyproject's entry points) is private: its `_` says so."""
    readers = [ROOT / "pyproject.toml", *(ROOT / ".github" / "workflows").glob("*.yml")]
    for folder in ("wheelfarm", "matrix", "builder", "index", "checks", "scripts", "tests",
                   "benchmarks", "ghsim"):  # fmt: skip
        readers += (ROOT / folder).rglob("*.py")
    words = {path: _words(path) for path in readers}
    lonely = [
        f"{_id(path)}:{node.lineno} {node.name}"
        for _, path in _modules()
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and not node.name.startswith("_")
        and not any(node.name in w for p, w in words.items() if p != path)
    ]
    assert not lonely, lonely
