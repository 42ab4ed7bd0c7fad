"""A source's `subdir` (flash-attn 3 builds hopper/ of its repository): the loader, the schema
and the builder refuse a folder that is absolute, climbs out with '..' (either slash), holds a
control character or is empty, each naming the value; the builder also refuses a subdir whose
symlinks lead out of the source tree, and builds in the folder otherwise."""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from packaging.version import Version

from tests.roots import REPO
from wheelfarm.builder.source import _build_folder, fetch
from wheelfarm.core.errors import BuildError, ConfigError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import PackageVersion, Source

from .conftest import package_yaml

MakeRoot = Callable[..., FarmRoot]
GIT = 'git: https://github.com/o/r, commit: "' + "0" * 40 + '"'
SDIST = 'sdist: pkg, sha256: "' + "a" * 64 + '"'
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
PATHS = settings(max_examples=300, deadline=None, database=None)
# path-like text: what the rule is about comes up often, anything else now and then
PIECES = [*"./\\:aC", "..", "\0", "\n", "\x7f", " "]
PATH_TEXT = st.lists(st.sampled_from(PIECES), max_size=10).map("".join) | st.text(
    string.printable, max_size=12
)


def _package(source: str) -> str:
    """A package file whose one version has `source` (a YAML flow mapping's inside)."""
    body = package_yaml("pkg")
    start, end = body.index("versions:"), body.index("abi:")
    return f'{body[:start]}versions:\n  - {{version: "1.0", source: {{{source}}}}}\n{body[end:]}'


@cache
def _schema_rule() -> Draft202012Validator:
    schema = json.loads((REPO.schemas / "package.schema.json").read_text(encoding="utf-8"))
    return Draft202012Validator(schema["$defs"]["subdir"])


@pytest.mark.parametrize("form", [GIT, SDIST], ids=["git", "sdist"])
@pytest.mark.parametrize("subdir", HOSTILE)
def test_the_loader_refuses_a_subdir_outside_the_source(
    subdir: str, form: str, matrix_dir: MakeRoot
) -> None:
    root = matrix_dir({"pkg": _package(f"{form}, subdir: {json.dumps(subdir)}")})
    with pytest.raises(ConfigError) as info:
        load_matrix(root)
    (problem,) = info.value.problems
    assert "versions[0].source.subdir:" in problem
    assert f"{subdir!r} does not match the folder inside the source" in problem
    assert "never absolute, never '..'" in problem


@pytest.mark.parametrize("form", [GIT, SDIST], ids=["git", "sdist"])
def test_a_subdir_is_carried_into_the_source(form: str, matrix_dir: MakeRoot) -> None:
    matrix = load_matrix(matrix_dir({"pkg": _package(f"{form}, subdir: hopper")}))
    (package,) = [p for p in matrix.packages if p.name == "pkg"]
    assert package.versions[0].source.subdir == "hopper"


def test_a_path_source_takes_no_subdir(matrix_dir: MakeRoot) -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'subdir'"):
        load_matrix(matrix_dir({"pkg": _package("path: demo, subdir: x")}))


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


# --- the builder -------------------------------------------------------------------------------


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


@pytest.mark.parametrize("target", ["outside", "../..", "/"])
def test_a_subdir_whose_symlink_leads_out_of_the_tree_is_refused(
    target: str, tmp_path: Path
) -> None:
    tree = tmp_path / "src"
    (tree / "a").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tree / "a" / "link").symlink_to(tmp_path / target if target == "outside" else target)
    with pytest.raises(BuildError, match=r"'a/link' leads to .* outside the source tree"):
        _build_folder("pkg", tree, "a/link")
    (tree / "up").symlink_to(tmp_path)  # a link higher up the path counts too
    with pytest.raises(BuildError, match=r"outside the source tree"):
        _build_folder("pkg", tree, "up/outside")


def test_a_symlink_inside_the_tree_is_followed(tmp_path: Path) -> None:
    tree = tmp_path / "src"
    (tree / "real" / "pkg").mkdir(parents=True)
    (tree / "link").symlink_to("real")
    assert _build_folder("pkg", tree, "link/pkg") == tree / "link" / "pkg"
