"""Tests of what reader does (filed by module: tests/README.md)."""

from __future__ import annotations

import shutil
import string
from collections.abc import Sequence
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.roots import REPO
from tests.unit.helpers.roots import MakeRoot, _one_problem, package_yaml
from tests.unit.helpers.strategies import (
    CALL_SECONDS,
    FEW,
    SOME,
    _maybe,
    _mutated,
    _outcome,
    deadline,
)
from wheelfarm.core.errors import ConfigError
from wheelfarm.core.platforms import NAMES
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.model import Matrix
from wheelfarm.matrix.reader import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_LINE,
    MAX_PROBLEMS,
    _parse_yaml,
)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5), f"nested deeper than {MAX_DEPTH} levels"),
        ("12.8: x\n", "key '12.8' is not a string: quote it"),
        ("a: 2024-13-01\n", "'2024-13-01' cannot be read as a timestamp (month must be in 1..12)"),
        (
            "a: [1, 2\n",
            "YAML syntax error: while parsing a flow sequence: did not find expected ',' or ']'",
        ),
        ("a: 1\n---\nb: 2\n", "YAML syntax error: expected a single document"),
    ],
    ids=["deep", "float key", "bad date", "syntax", "two documents"],
)
def test_yaml_the_farm_refuses(
    body: str, message: str, matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    _one_problem(matrix_dir({"pkg": body}), capsys, "pkg.yaml:", message)


def test_a_file_past_the_size_limit_is_not_parsed(
    matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    text = package_yaml("pkg") + "#" * MAX_FILE_BYTES
    _one_problem(matrix_dir({"pkg": text}), capsys, f"larger than {MAX_FILE_BYTES} bytes")


def test_text_libyaml_cannot_encode_is_a_yaml_error_not_a_traceback() -> None:
    """libyaml reads UTF-8 bytes: a lone surrogate (no file read as UTF-8 holds one, but a caller
    of _parse_yaml might pass one) is refused as YAML the farm will not read."""
    with pytest.raises(yaml.YAMLError, match=r"not UTF-8 text \(surrogates not allowed"):
        _parse_yaml("a: \ud800")


class _NoAliases(yaml.SafeDumper):
    """Hypothesis may hand the same object twice; the farm refuses aliases, so write it out."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _pick(good: Sequence[Any], bad: list[Any]) -> st.SearchStrategy[Any]:
    """One of `good` or `bad`, each good value ten times as likely as a bad one."""
    return st.sampled_from([*good] * 10 + bad)


VERSIONS = st.lists(
    st.fixed_dictionaries(
        {
            "version": _maybe(
                _pick(["1.0", "2.8.3.post2", "0.1", "1!2.0", "3.0rc1"], ["1.0+cu130", "x"])
            ),
            "source": _maybe(
                st.one_of(
                    st.fixed_dictionaries(
                        {"sdist": st.just("pkg"), "sha256": _pick(["a" * 64], ["A" * 64, "ab"])}
                    ),
                    st.fixed_dictionaries(
                        {
                            "git": _pick(
                                ["https://github.com/o/r"],
                                ["--upload-pack=x", "file:///x", "https://u@h/r"],
                            ),
                            "commit": _pick(["0" * 40], ["main"]),
                        }
                    ),
                    st.fixed_dictionaries(
                        {"path": _pick(["demo", "demo/pkg"], ["/etc/ssl", "../..", "a\0b", "."])}
                    ),
                )
            ),
        },
        optional={
            "patches": _maybe(
                st.lists(
                    _pick(
                        ["causal_conv1d-1.7.0-archs.patch"], ["../x.patch", "x.patch", "/x.patch"]
                    ),
                    max_size=2,
                )
            ),
            "yanked": _maybe(st.text(max_size=10)),
        },
    ),
    min_size=1,
    max_size=3,
    unique_by=lambda v: str(v.get("version")),
)


ARCH = st.fixed_dictionaries(
    {"via": _pick(["torch", "env"], ["patch", "other"])},
    optional={
        "format": _pick(["torch", "comma-int", "semicolon-int"], ["x"]),
        "override": st.lists(
            st.fixed_dictionaries(
                {"archs": _pick(["8.0;9.0+PTX", "9.0", "7.5;8.0;12.0"], ["5.0", "9.10", "sm_90"])},
                optional={
                    "cuda": _pick([">=12.8", "<13"], ["=>1"]),
                    "platform": _pick(NAMES, ["macos"]),
                },
            ),
            max_size=2,
        ),
    },
).map(lambda arch: {**arch, "env": "PKG_ARCHS"} if arch["via"] == "env" else arch)


PACKAGE = st.fixed_dictionaries(
    {
        "name": st.just("pkg"),
        "versions": _maybe(VERSIONS),
        "abi": _maybe(st.fixed_dictionaries({"kind": _pick(["cpython", "abi3", "torch-free"], ["torch-stable", "c"])},
                                            optional={"min_torch": _pick(["2.10", "2.4"], ["3"]), "python": _pick(["cpython", "abi3", "none"], ["py3"]), "python_floor": _pick(["3.9", "3"], ["2.7"])})),
        "arch": _maybe(ARCH),
        "import": _maybe(st.lists(_pick(["pkg", "pkg._C"], [""]), min_size=1, max_size=2)),
    },
    optional={
        "constraints": _maybe(st.fixed_dictionaries({}, optional={
            "torch": _pick([">=2.6", "<2.5", "~=2.4", "==2.14"], ["nonsense"]),
            "python": _pick([">=3.10", "==3.12.*", "<3.12"], ["3"]),
            "cuda": _pick([">=12.4", "==13.0", "!=12.6"], [">>1"]),
            "platforms": st.lists(_pick(NAMES, ["macos"]), min_size=1, max_size=3, unique=True)})),
        "exclude": _maybe(st.lists(st.fixed_dictionaries({"reason": _pick(["no kernels"], ["x"])}, optional={
            "cuda": _pick(["cu130", "cu126"], ["cu1", "*"]), "python": _pick(["3.1*", "[!3]*", "3.12"], ["["]),
            "torch": _pick(["2.1?", "2.14"], ["[]"]), "version": st.text(max_size=5)}), max_size=2)),
        "env": _maybe(st.dictionaries(_pick(["A", "B_1"], ["1X"]), st.text(max_size=5), max_size=2)),
        "build_minutes_per_arch": _maybe(st.floats(0.01, 1e6) | st.integers(1, 10**30)),
        "gb_per_job": _maybe(st.floats(0.01, 1e6) | st.floats(allow_nan=True)),
        "local_version": _maybe(st.fixed_dictionaries({"env": _pick(["PKG_LOCAL"], ["x y"])})),
        "vendor_allow": _maybe(st.lists(st.text(max_size=8), max_size=2)),
        "homepage": _maybe(st.text(max_size=10)),
    },
)  # fmt: skip


YAML_ALPHABET = (
    string.ascii_letters[:6] + string.digits[:4] + " \n\t:-[]{},&*!|>'\"#.%@?~\\\x00\x85\ufeff"
)


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> FarmRoot:
    """One farm root for a whole property: hypothesis calls the test many times per fixture."""
    root = FarmRoot(tmp_path_factory.mktemp("farm"))
    (root.packages).mkdir(parents=True)
    shutil.copytree(REPO.schemas, root.schemas)
    shutil.copytree(REPO.patches, root.patches)
    for path in REPO.matrix.glob("*.yaml"):
        shutil.copy(path, root.matrix / path.name)
    return root


def _load(root: FarmRoot) -> Matrix | None:
    """load_matrix: a Matrix, or ConfigError with a bounded list of one-line problems."""
    result = _outcome(lambda: load_matrix(root), ConfigError)
    if not isinstance(result, ConfigError):
        return result
    assert result.problems
    assert len(result.problems) <= MAX_PROBLEMS + 1
    assert all("\n" not in p and len(p) <= MAX_LINE for p in result.problems)
    return None


@SOME
@given(package=PACKAGE)
def test_loader_on_generated_package_files(farm: FarmRoot, package: dict[str, Any]) -> None:
    text = yaml.dump(package, Dumper=_NoAliases, allow_unicode=True)
    (farm.packages / "pkg.yaml").write_text(text, encoding="utf-8")
    matrix = _load(farm)
    if matrix is not None:  # what the loader lets through, the planner can expand
        with deadline(CALL_SECONDS):
            expand(matrix)


@FEW
@given(text=st.text(YAML_ALPHABET, max_size=200))
def test_loader_on_yaml_noise(farm: FarmRoot, text: str) -> None:
    (farm.packages / "pkg.yaml").write_text(text, encoding="utf-8")
    assert _load(farm) is None  # noise is never a package


@FEW
@given(data=st.data())
@pytest.mark.parametrize(
    "name", ["torch.yaml", "arch.yaml", "farm.yaml", "packages/flash-attn.yaml"]
)
def test_loader_on_mutated_shipped_files(farm: FarmRoot, name: str, data: st.DataObject) -> None:
    original = (REPO.matrix / name).read_bytes()
    target = farm.matrix / name
    for stale in farm.packages.glob("*.yaml"):
        stale.unlink()
    shutil.copy(REPO.packages / "flash-attn.yaml", farm.packages)  # a grid file needs a package
    try:
        target.write_bytes(data.draw(_mutated(original)))
        _load(farm)
    finally:
        target.write_bytes(original)
