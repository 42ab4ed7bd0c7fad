"""Tests of what model_subdir does (filed by module: tests/README.md)."""

from __future__ import annotations

import json
import string
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from packaging.version import Version

from tests.roots import REPO
from tests.unit.helpers.roots import HOSTILE
from wheelfarm.builder.source import fetch
from wheelfarm.core.errors import BuildError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.model import PackageVersion, Source

PATHS = settings(max_examples=300, deadline=None, database=None)


# path-like text: what the rule is about comes up often, anything else now and then
PIECES = [*"./\\:aC", "..", "\0", "\n", "\x7f", " "]


PATH_TEXT = st.lists(st.sampled_from(PIECES), max_size=10).map("".join) | st.text(
    string.printable, max_size=12
)


@cache
def _schema_rule() -> Draft202012Validator:
    schema = json.loads((REPO.schemas / "package.schema.json").read_text(encoding="utf-8"))
    return Draft202012Validator(schema["$defs"]["subdir"])


def _fetch(root: FarmRoot, subdir: str, tmp_path: Path) -> Path:
    """fetch() of a `path:` source of the farm root (no network, no subprocess)."""
    source = Source(path="upstream", subdir=subdir)
    version = PackageVersion(version=Version("1.0"), source=source)
    log = tmp_path / "source.log"
    return fetch(
        "pkg", version, tmp_path / "work", root=root, cache=tmp_path, sdist_index="", log=log
    )


@pytest.fixture
def upstream(tmp_path: Path) -> FarmRoot:
    """A farm root holding upstream/, a repository with its package in hopper/."""
    root = FarmRoot(tmp_path / "farm")
    (root.path / "upstream" / "hopper").mkdir(parents=True)
    (root.path / "upstream" / "hopper" / "setup.py").write_text("", encoding="utf-8")
    (root.path / "upstream" / "README.md").write_text("", encoding="utf-8")
    return root


@pytest.mark.parametrize("subdir", HOSTILE)
def test_the_rule_in_code_names_the_problem(subdir: str) -> None:
    problem = Source.subdir_problem(subdir)
    assert problem in {
        "is empty",
        "is absolute",
        "climbs out with '..'",
        "holds a control character (NUL, newline, ...)",
    }


@PATHS
@given(PATH_TEXT)
def test_the_schema_and_the_code_agree_on_every_subdir(subdir: str) -> None:
    assert _schema_rule().is_valid(subdir) == (Source.subdir_problem(subdir) is None)


@PATHS
@given(st.lists(st.sampled_from(["a", "..", ".", "b.c", "..."]), min_size=1, max_size=5))
def test_a_subdir_with_a_dotdot_part_is_refused_whichever_slash(parts: list[str]) -> None:
    for slash in "/\\":
        subdir = slash.join(parts)
        refused = Source.subdir_problem(subdir) is not None
        assert refused == (".." in parts), subdir
        assert _schema_rule().is_valid(subdir) != refused, subdir


def test_the_build_runs_in_the_subdir_of_the_whole_tree(upstream: FarmRoot, tmp_path: Path) -> None:
    folder = _fetch(upstream, "hopper", tmp_path)
    assert folder == tmp_path / "work" / "src" / "hopper"
    assert (folder / "setup.py").is_file()
    assert (folder.parent / "README.md").is_file()  # the rest of the source is there too


@pytest.mark.parametrize("subdir", HOSTILE)
def test_a_hostile_subdir_is_refused_before_anything_is_fetched(
    subdir: str, upstream: FarmRoot, tmp_path: Path
) -> None:
    with pytest.raises(BuildError, match=r"pkg: source subdir .* give a folder inside") as info:
        _fetch(upstream, subdir, tmp_path)
    assert repr(subdir) in str(info.value)
    assert not (tmp_path / "work").exists()


def test_a_missing_subdir_is_a_build_error(upstream: FarmRoot, tmp_path: Path) -> None:
    with pytest.raises(BuildError, match=r"'nope' is not a folder of the source"):
        _fetch(upstream, "nope", tmp_path)
