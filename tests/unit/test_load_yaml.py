"""Tests of what load_yaml does (filed by module: tests/README.md)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.unit.helpers.roots import MakeRoot, _one_problem, _versions, package_yaml
from tests.unit.helpers.wheels import NAME, wheelhouse_catalog
from wheelfarm.cli import main
from wheelfarm.core.errors import ConfigError, PlanError, SiteError, UsageError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.load import FILES, load_matrix

SHA = "a" * 64


BOMB = """\
name: pkg
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
j: &j [*i, *i, *i, *i, *i, *i, *i, *i, *i]
k: &k [*j, *j, *j, *j, *j, *j, *j, *j, *j]
versions: *k
"""


def _replace(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def test_duplicate_key_is_refused_with_both_lines(
    matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    text = package_yaml("pkg") + 'versions:\n  - {version: "2.0", source: {path: demo}}\n'
    root = matrix_dir({"pkg": text})
    _one_problem(root, capsys, "pkg.yaml:9: duplicate key 'versions' (first on line 2)", "keep one")


def test_alias_bomb_is_refused_at_the_first_alias(
    matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.perf_counter()
    problem = _one_problem(matrix_dir({"pkg": BOMB}), capsys, "pkg.yaml:3: alias *a refused")
    assert len(problem) < 400
    assert time.perf_counter() - started < 5


def test_a_huge_value_is_clipped_in_the_message(
    matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    text = package_yaml("pkg").replace("import: [pkg]", f"import: {'x' * 500_000}")
    problem = _one_problem(matrix_dir({"pkg": text}), capsys, "pkg.yaml:7: import: 'xxx")
    assert len(problem) <= 400


def test_bad_utf8_names_the_byte(matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]) -> None:
    root = matrix_dir({"pkg": package_yaml("pkg")})
    (root.matrix / "torch.yaml").write_bytes(b"index_url: \xff\xfe\n")
    _one_problem(root, capsys, "torch.yaml: not UTF-8 (invalid start byte at byte 11)")


def test_too_many_problems_are_cut_with_a_count(matrix_dir: MakeRoot) -> None:
    keys = "".join(f"bogus{i}: 1\n" for i in range(300))
    with pytest.raises(ConfigError) as info:
        load_matrix(matrix_dir({"pkg": package_yaml("pkg") + keys}))
    assert len(info.value.problems) == 201
    assert info.value.problems[-1] == "... and 100 more problems: fix these first"


@pytest.mark.parametrize(
    "versions",
    [
        (f'{{version: "1.0", source: {{sdist: pkg, sha256: "{SHA}"}}}}',
         f'{{version: "1.0.0", source: {{sdist: pkg, sha256: "{SHA}"}}}}'),
        (f'{{version: "1.0", source: {{sdist: pkg, sha256: "{SHA}"}}}}',
         '{version: "1.0", source: {path: demo/other}}'),
    ],
    ids=["1.0 and 1.0.0", "same version, another source"],
)  # fmt: skip
def test_versions_are_unique_by_pep440(
    versions: tuple[str, str], matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    root = matrix_dir({"pkg": _versions(*versions)})
    _one_problem(root, capsys, "pkg.yaml:4: versions[1].version:", "is versions[0] again")


@pytest.mark.parametrize("patch", ["../../tmp/x.patch", "/etc/x.patch", "sub/x.patch"])
def test_a_patch_must_be_a_plain_name_in_the_patches_folder(
    patch: str, matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    item = f'{{version: "1.0", source: {{sdist: pkg, sha256: "{SHA}"}}, patches: ["{patch}"]}}'
    root = matrix_dir({"pkg": _versions(item)})
    _one_problem(root, capsys, "versions[0].patches[0]:", "A plain file name (no folder)")


@pytest.mark.parametrize("path", ["/etc/ssl", "../../etc", "demo/../../.."])
def test_a_path_source_outside_the_root_is_refused_by_the_schema(
    path: str, matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    root = matrix_dir({"pkg": _versions(f'{{version: "1.0", source: {{path: "{path}"}}}}')})
    _one_problem(root, capsys, "versions[0].source.path:", "A folder inside the farm root")


def test_a_path_source_that_links_out_of_the_root_is_refused(
    matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = matrix_dir({"pkg": _versions('{version: "1.0", source: {path: demo/link}}')})
    (root.path / "demo").mkdir()
    (root.path / "demo" / "link").symlink_to(tmp_path)
    _one_problem(root, capsys, "versions[0].source.path: 'demo/link'", "leaves the farm root")


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        ("torch", '["3.8", "3.12"]', '["3", "3.12"]', "torch.yaml:25: releases[0].python[0]: '3'"),
        ("torch", '["3.8", "3.12"]', '["3.12", "3.8"]', "releases[0].python: ['3.12', '3.8'] is not a range"),
        ("torch", '["3.8", "3.12"]', '["3.8", "4.1"]', "releases[0].python: ['3.8', '4.1'] is not a range"),
        ("torch", '"2.5.1"', '"2.4.0"', "releases[1].torch: torch 2.4 is listed twice"),
        ("torch", "whl/{cuda}", "whl/{cuda}/{x.__class__}", "index_url: 'https://download.pytorch.org/whl/{cuda}/{x.__class__}' may hold no field but {cuda}"),
        ("arch", '"11.8": ["3.5", "9.0"]', '"11.8": ["sm35", "9.0"]', "supported.11.8[0]: 'sm35' does not match"),
        ("arch", '"11.8": ["3.5", "9.0"]', '"11.8": ["9.0", "3.5"]', "supported.11.8: ['9.0', '3.5'] is reversed"),
        ("arch", '"12.1": {linux_x86_64: "5.0;', '"12.1": {linux_x86_64: "5.10;', "policy.12.1.linux_x86_64: '5.10;"),
    ],
    ids=["python 3", "reversed python", "two majors", "torch twice", "index_url", "sm35", "reversed sm", "sm 5.10"],
)  # fmt: skip
def test_grid_files_give_a_line_not_a_traceback(
    file: str,
    old: str,
    new: str,
    message: str,
    matrix_dir: MakeRoot,
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = (REPO.matrix / f"{file}.yaml").read_text()
    root = matrix_dir({"pkg": package_yaml("pkg")}, **{file: _replace(text, old, new)})
    _one_problem(root, capsys, f"{file}.yaml", message)


@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_numbers_must_be_finite(
    value: str, matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    text = package_yaml("pkg").replace("build_minutes_per_arch: 1", f"gb_per_job: {value}")
    _one_problem(matrix_dir({"pkg": text}), capsys, "gb_per_job:", "is not a finite number")


@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_a_versions_estimate_must_be_finite(
    value: str, matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    text = package_yaml("pkg").replace(
        "    source: {", f"    build_minutes_per_arch: {value}\n    source: {{", 1
    )
    _one_problem(
        matrix_dir({"pkg": text}),
        capsys,
        "pkg.yaml:4: versions[0].build_minutes_per_arch:",
        "not a finite",
    )


@pytest.mark.parametrize(
    ("argv", "error", "message"),
    [
        (["validate", "--root", "/nonexistent"], UsageError, "--root '/nonexistent' is not a farm root"),
        (["plan", "--matrix", "/nonexistent"], UsageError, "unrecognized arguments: --matrix"),
        (["plan", "--max-jobs", "-5"], PlanError, "--max-jobs -5: a shard holds 1 to 256 jobs"),
        (["plan", "--max-jobs", "1000"], PlanError, "--max-jobs 1000: a shard holds 1 to 256 jobs"),
    ],
    ids=["--root", "--matrix", "--max-jobs -5", "--max-jobs 1000"],
)  # fmt: skip
def test_command_line_rows(
    argv: list[str],
    error: type[Exception],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO.path)
    assert main(argv) == getattr(error, "exit_code", None)
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message in err


def test_garbled_existing_packages_json_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO.path)
    garbled = tmp_path / "packages.json"
    garbled.write_text('{"wheels": [{"filename": 7}')
    assert main(["plan", "--existing", str(garbled)]) == UsageError.exit_code
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"--existing {str(garbled)!r} is not a wheelfarm packages.json" in err


def test_wheelhouse_non_zip_wheel_names_the_file(tmp_path: Path) -> None:
    (tmp_path / NAME).write_bytes(b"not a zip")
    with pytest.raises(SiteError) as info:
        wheelhouse_catalog(tmp_path, None, {})
    assert str(info.value) == (
        f"{tmp_path / NAME}: not a readable farm wheel (File is not a zip file); "
        f"rebuild it or remove it"
    )


def _validate_yaml_layer(root: FarmRoot, capsys: pytest.CaptureFixture[str]) -> list[str]:
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
    problems = _validate_yaml_layer(FarmRoot(shipped.parents[1]), capsys)
    found = [p for p in problems if f"{wrong}: unknown key {wrong!r}" in p]
    assert len(found) == 1, problems
    assert found[0].startswith(f"{shipped}:{line}: ")
    assert f"did you mean {right!r}?" in found[0]


def test_a_typo_in_a_package_file_is_reported_with_its_line(
    matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    root = matrix_dir({"pkg": package_yaml("pkg", extra="improt: [pkg]\n")})
    (problem,) = _validate_yaml_layer(root, capsys)
    assert problem.startswith(f"{root.packages / 'pkg.yaml'}:9: improt: unknown key 'improt'")
    assert "did you mean 'import'?" in problem


def test_a_misnamed_file_is_reported_not_skipped(
    matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    root = matrix_dir({"pkg": package_yaml("pkg")})
    (root.matrix / "drivers.yaml").rename(root.matrix / "driver.yaml")
    problems = _validate_yaml_layer(root, capsys)
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
    (problem,) = _validate_yaml_layer(root, capsys)
    assert "toolkits.yaml:" in problem
    assert "toolkits.cu118: CUDA 11 has no driver floor in drivers.yaml" in problem
