"""Every YAML file of the farm root goes through the one reader: a typo in any of them is a
`file:line` problem from `wheelfarm validate`, with "did you mean" (issue #25: typos in
libraries.yaml, drivers.yaml and toolkits.yaml once passed validate)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.roots import REPO
from wheelfarm.cli import main
from wheelfarm.core.errors import ConfigError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.facts import load_facts
from wheelfarm.matrix.load import FILES, load_matrix

from .conftest import package_yaml

MakeRoot = Callable[..., FarmRoot]


def _validate(root: FarmRoot, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """`wheelfarm validate` on a broken root: exit 10, one line per problem."""
    code = main(["validate", "--root", str(root.path)])
    err = capsys.readouterr().err
    assert code == ConfigError.exit_code, err
    assert "Traceback" not in err
    return [line.removeprefix("  - ") for line in err.splitlines()[1:]]


def _line(text: str, fragment: str) -> int:
    return text[: text.index(fragment)].count("\n") + 1


TYPOS = {  # file -> (text as shipped, the typo'd text, the wrong key, the key it should be)
    "torch": ("\nplatforms:", "\nplatfroms:", "platfroms", "platforms"),
    "arch": ("\nsupported:", "\nsuported:", "suported", "supported"),
    "farm": ("\nsplit_compile:", "\nsplit_compil:", "split_compil", "split_compile"),
    "toolkits": ('cu130: {version: "13.0.2"', 'cu130: {verison: "13.0.2"', "verison", "version"),
    "compat": ("    gcc_max: 13", "    gcc_mx: 13", "gcc_mx", "gcc_max"),
    "libraries": ("\n  windows: [kernel32.dll", "\n  windwos: [kernel32.dll", "windwos", "windows"),
    "drivers": ('"580.65.06", windows:', '"580.65.06", windwos:', "windwos", "windows"),
}


def test_every_file_of_the_root_has_a_typo_case() -> None:
    assert set(TYPOS) == set(FILES)
    assert {p.stem for p in REPO.matrix.glob("*.yaml")} == set(FILES)
    schemas = {p.name.removesuffix(".schema.json") for p in REPO.schemas.glob("*.json")}
    assert {*FILES, "package"} <= schemas


@pytest.mark.parametrize("file", sorted(TYPOS))
def test_a_typo_in_each_file_is_reported_with_its_line(
    file: str, matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new, wrong, right = TYPOS[file]
    shipped = matrix_dir({"pkg": package_yaml("pkg")}).matrix / f"{file}.yaml"
    text = shipped.read_text(encoding="utf-8")
    assert old in text
    shipped.write_text(text.replace(old, new, 1), encoding="utf-8")
    line = _line(text, old) + old.startswith("\n")
    problems = _validate(FarmRoot(shipped.parents[1]), capsys)
    found = [p for p in problems if f"{wrong}: unknown key {wrong!r}" in p]
    assert len(found) == 1, problems
    assert found[0].startswith(f"{shipped}:{line}: ")
    assert f"did you mean {right!r}?" in found[0]


def test_a_typo_in_a_package_file_is_reported_with_its_line(
    matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    root = matrix_dir({"pkg": package_yaml("pkg", extra="improt: [pkg]\n")})
    (problem,) = _validate(root, capsys)
    assert problem.startswith(f"{root.packages / 'pkg.yaml'}:9: improt: unknown key 'improt'")
    assert "did you mean 'import'?" in problem


def test_a_misnamed_file_is_reported_not_skipped(
    matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    root = matrix_dir({"pkg": package_yaml("pkg")})
    (root.matrix / "drivers.yaml").rename(root.matrix / "driver.yaml")
    problems = _validate(root, capsys)
    assert any(
        p.startswith(f"{root.matrix / 'driver.yaml'}: no farm file has this name")
        and "did you mean drivers.yaml?" in p
        for p in problems
    ), problems
    assert any(p.startswith(f"{root.matrix / 'drivers.yaml'}: cannot read it") for p in problems)


def test_a_cuda_major_without_a_driver_floor_is_refused(
    matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (REPO.matrix / "drivers.yaml").read_text(encoding="utf-8")
    cut = text.replace('  "11": {linux: "450.80.02", windows: "452.39"}\n', "")
    root = matrix_dir({"pkg": package_yaml("pkg")}, drivers=cut)
    (problem,) = _validate(root, capsys)
    assert "toolkits.yaml:" in problem
    assert "toolkits.cu118: CUDA 11 has no driver floor in drivers.yaml" in problem


def test_the_matrix_holds_every_file_once_loaded() -> None:
    matrix = load_matrix(REPO)
    assert matrix.facts == load_facts(REPO)
    assert matrix.facts.drivers["13"] == ("580.65.06", "580.88")
    assert "libcudart.so.*" in matrix.facts.libraries.provided["linux"]
    assert "cu130" in matrix.facts.toolkits.toolkits
    assert "13.0" in matrix.facts.compat.cuda
