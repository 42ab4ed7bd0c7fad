"""checks/: one kernel check per catalog package, named after it. Read as source here (the dev
environment has no torch); tests/integration/test_gpucheck.py imports each in a torch env and
runs its CPU path where the package has one."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.builder.gpucheck import check_name, check_packages
from wheelfarm.matrix.load import load_matrix

CHECKS = REPO.path / "checks"
FILES = sorted(CHECKS.glob("*.py"))
MODULES = sorted(p for p in FILES if not p.name.startswith("_"))
# what a check may import: it runs in a target env, where wheelfarm is not installed
ALLOWED = {*sys.stdlib_module_names, "torch", "numpy"}


def _tree(path: Path) -> ast.Module:
    # the oldest Python a target has: a check must parse there
    return ast.parse(path.read_text(encoding="utf-8"), feature_version=(3, 9))


def _assigned(tree: ast.Module) -> dict[str, object]:
    out: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = ast.literal_eval(node.value) if isinstance(
                node.value, ast.Constant) else node.value  # fmt: skip
    return out


def test_at_least_25_catalog_packages_have_a_check_named_after_them() -> None:
    packages = {check_name(p.name) for p in load_matrix(REPO).packages}
    names = check_packages(REPO)
    assert len(names) >= 25, names
    assert set(names) <= packages, sorted(set(names) - packages)
    assert [p.stem for p in MODULES] == names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_a_check_says_its_reference_and_its_cpu_path_and_runs(path: Path) -> None:
    tree = _tree(path)
    assert ast.get_docstring(tree), "a check says what it compares in its docstring"
    values = _assigned(tree)
    assert isinstance(values.get("REFERENCE"), str) and values["REFERENCE"], "REFERENCE"
    cpu = values.get("CPU")
    assert cpu is True or (isinstance(cpu, str) and cpu), "CPU: True, or why there is none"
    runs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run"]
    assert len(runs) == 1
    assert [a.arg for a in runs[0].args.args] == ["check", "device"]
    calls = {
        n.func.attr
        for n in ast.walk(runs[0])
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name) and n.func.value.id == "check"
    }  # fmt: skip
    helpers = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name != "run"]
    for helper in helpers:
        calls |= {
            n.func.attr for n in ast.walk(helper) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
            and n.func.value.id == "check"
        }  # fmt: skip
    assert calls & {"close", "similar", "ran"}, "it reports at least one op"
    if str(values["REFERENCE"]).startswith("none:"):
        assert "ran" in calls or "close" in calls


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_a_check_imports_its_package_only_when_it_runs(path: Path) -> None:
    """Module level: the standard library, torch and this folder only, so every check imports
    in a torch env without its package (CI), and nothing of wheelfarm (not installed there)."""
    tree = _tree(path)
    for node in tree.body:
        if isinstance(node, ast.Import):
            assert {a.name.split(".")[0] for a in node.names} <= ALLOWED, ast.dump(node)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 1 or (node.module or "").split(".")[0] in ALLOWED, ast.dump(node)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert not (node.module or "").startswith("wheelfarm"), ast.dump(node)
