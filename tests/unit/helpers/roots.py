"""Farm roots for unit tests: the frozen grid, package YAML, `validate` runs, hostile paths."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.cli import main
from wheelfarm.core.errors import ConfigError
from wheelfarm.core.root import FarmRoot
from wheelfarm.core.simple import IndexFile
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix

GRID_UP_TO = "2.14"  # the torch minor the unit tests' numbers were worked out against


def frozen_grid() -> str:
    """The shipped torch.yaml without the releases after GRID_UP_TO: a torch release added to
    the grid moves no number a unit test pins (its comments and lines stay as shipped)."""
    text = (REPO.matrix / "torch.yaml").read_text(encoding="utf-8")
    cut = text.find(f'  - torch: "{GRID_UP_TO}.')
    later = text.find("  - torch:", text.index("\n", cut))
    return text if later == -1 else text[:later]


MINIMAL = """\
name: {name}
versions:
  - version: "1.0.0"
    source: {{sdist: {name}, sha256: "{sha}"}}
abi: {abi}
arch: {{via: torch}}
import: [{module}]
build_minutes_per_arch: 1
"""


def package_yaml(name: str = "demo-pkg", abi: str = "{kind: cpython}", extra: str = "") -> str:
    """MINIMAL with `extra`'s top-level keys in place of its own (duplicate keys are refused)."""
    extra = textwrap.dedent(extra)
    keys = {line.split(":", 1)[0] for line in extra.splitlines() if line[:1].isalpha()}
    body = MINIMAL.format(name=name, sha="a" * 64, abi=abi, module=name.replace("-", "_"))
    kept, dropping = [], False
    for line in body.splitlines(keepends=True):
        if line[:1].isalpha():  # a top-level key: its indented lines go with it
            dropping = line.split(":", 1)[0] in keys
        if not dropping:
            kept.append(line)
    return "".join(kept) + extra


TORCH_FREE = "{kind: torch-free}"


PYCUDA = "pycuda-2026.1-cu130-cp312-linux_x86_64"


MATRIX = load_matrix(REPO)


TABLE = MATRIX.facts.toolkits


FACTS = MATRIX.facts.compat


def _root(matrix_dir: Callable[..., FarmRoot], toolkit_line: str = "", farm: str = "") -> FarmRoot:
    """A farm root whose toolkits.yaml has `toolkit_line` in place of that tag's line."""
    root = matrix_dir({"demo-pkg": package_yaml()}, **({"farm": farm} if farm else {}))
    if toolkit_line:
        path = root.matrix / "toolkits.yaml"
        tag = toolkit_line.split(":", 1)[0].strip()
        path.write_text(
            re.sub(rf"^  {tag}:.*$", toolkit_line, path.read_text(), flags=re.MULTILINE)
        )
    return root


MakeRoot = Callable[..., FarmRoot]


BASE = (
    'abi: {kind: torch-free}\nconstraints: {torch: ">=2.14", cuda: "==13.0", '
    "platforms: [linux_x86_64]}\n"
)


def _root_distribution(
    matrix_dir: MakeRoot, base: str = 'distribution: "base-{cuda_tag}"\n'
) -> FarmRoot:
    user = BASE + "farm_requires: [base]\nfarm_build_requires: [base]\n"
    return matrix_dir(
        {
            "base": package_yaml("base", extra=BASE + base),
            "user": package_yaml("user", extra=user + 'distribution: "user-{cuda_tag}"\n'),
        }
    )


BASE_farm_requires = 'constraints: {torch: ">=2.13", cuda: "==13.0", platforms: [linux_x86_64]}\n'


USER = BASE_farm_requires


def _root_farm_requires(
    matrix_dir: MakeRoot, user_extra: str, base_extra: str = BASE_farm_requires
) -> FarmRoot:
    return matrix_dir(
        {
            "base": package_yaml("base", extra=base_extra),
            "user": package_yaml("user", extra=user_extra + "farm_requires: [base]\n"),
        }
    )


def _root_two_producers(matrix_dir: MakeRoot) -> FarmRoot:
    """base and other, and user, which imports both (farm_requires): a consumer of two
    producer groups in each cell."""
    return matrix_dir(
        {
            "base": package_yaml("base", extra=USER),
            "other": package_yaml("other", extra=USER),
            "user": package_yaml("user", extra=USER + "farm_requires: [base, other]\n"),
        }
    )


def _validate(root: FarmRoot, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """`wheelfarm validate` on a broken root: exit 10, no traceback; the problem lines."""
    code = main(["validate", "--root", str(root.path)])
    err = capsys.readouterr().err
    assert code == ConfigError.exit_code, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert lines[0].startswith("wheelfarm validate: error: invalid matrix configuration")
    return [line.removeprefix("  - ") for line in lines[1:]]


def _one_problem(root: FarmRoot, capsys: pytest.CaptureFixture[str], *parts: str) -> str:
    problems = _validate(root, capsys)
    assert len(problems) == 1, problems
    for part in parts:
        assert part in problems[0], problems[0]
    return problems[0]


def _versions(*items: str) -> str:
    body = package_yaml("pkg")
    start, end = body.index("versions:"), body.index("abi:")
    return body[:start] + "versions:\n" + "".join(f"  - {i}\n" for i in items) + body[end:]


ONLY_214 = """\
    constraints: {torch: ">=2.14", cuda: "==13.0", platforms: [linux_x86_64]}
    """


def _matrix(matrix_dir: Callable[..., Path], abi: str, extra: str = ONLY_214) -> Matrix:
    return load_matrix(matrix_dir({"pkg": package_yaml("pkg", abi=abi, extra=extra)}))


HOSTILE = [
    "../x",
    "..",
    "hopper/../../x",
    "a/..",
    "..\\x",
    "a\\..\\..\\x",
    "/etc",
    "\\\\server\\share",
    "C:\\x",
    "c:x",
    "",
    "a\0b",
    "a\n/../b",
]


SHA_A, SHA_B = "a" * 64, "b" * 64


def _sdist(name: str, sha256: str | None = SHA_A, *, yanked: bool = False) -> IndexFile:
    return IndexFile(name, f"https://files.invalid/{name}", yanked, sha256=sha256)
