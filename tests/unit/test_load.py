from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.roots import REPO
from wheelfarm.core.errors import ConfigError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.load import load_matrix

from .conftest import package_yaml


def test_shipped_matrix_is_valid() -> None:
    matrix = load_matrix(REPO)
    names = {p.name for p in matrix.packages}
    assert {"wheelfarm-demo", "flash-attn", "causal-conv1d"} <= names
    assert len(names) >= 5
    assert [r.minor for r in matrix.releases] == [f"2.{m}" for m in range(4, 16)]


def test_every_error_at_once_with_file_line_key_and_hint(matrix_dir: Callable[..., Path]) -> None:
    root = matrix_dir(
        {
            "typo-pkg": package_yaml(
                "typo-pkg",
                extra="""\
            constraints:
              platfroms: [linux_x86_64]
            """,
            ),
            "bad-platform": package_yaml(
                "bad-platform",
                extra="""\
            exclude:
              - {platform: linux_x64, reason: "no arm"}
            """,
            ),
        }
    )
    with pytest.raises(ConfigError) as info:
        load_matrix(root)
    problems = info.value.problems
    assert len(problems) == 2
    typo = next(p for p in problems if "typo-pkg.yaml" in p)
    assert "typo-pkg.yaml:10: constraints.platfroms: unknown key 'platfroms'" in typo
    assert "did you mean 'platforms'?" in typo
    bad = next(p for p in problems if "bad-platform.yaml" in p)
    assert "bad-platform.yaml:10: exclude[0].platform: 'linux_x64' is not allowed" in bad
    assert "linux_x86_64" in bad


def test_unknown_top_level_key_is_an_error(matrix_dir: Callable[..., Path]) -> None:
    root = matrix_dir({"pkg": package_yaml("pkg", extra="improt: [pkg]\n")})
    with pytest.raises(
        ConfigError, match=r"pkg.yaml:9: improt: unknown key 'improt'.*did you mean 'import'"
    ):
        load_matrix(root)


def test_yaml_syntax_error_names_the_line(matrix_dir: Callable[..., Path]) -> None:
    root = matrix_dir({"pkg": "name: pkg\nversions: [\n  - oops: ]\n"})
    with pytest.raises(ConfigError, match=r"pkg.yaml:\d+: YAML syntax error"):
        load_matrix(root)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("constraints: {torch: '=>2.6'}\n", "'=>2.6' is not a PEP 440 specifier"),
        ("arch: {via: env}\n", "arch.env: required when via is 'env'"),
    ],
)
def test_semantic_errors(matrix_dir: Callable[..., Path], extra: str, message: str) -> None:
    text = (
        package_yaml("pkg").replace("arch: {via: torch}\n", "")
        if "arch:" in extra
        else package_yaml("pkg")
    )
    root = matrix_dir({"pkg": text + extra})
    with pytest.raises(ConfigError, match=message):
        load_matrix(root)


@pytest.mark.parametrize(
    ("abi", "message"),
    [
        ("{kind: torch-stable}", r"abi.min_torch: required for kind 'torch-stable'"),
        ("{kind: abi3, python: none}", r"abi.python: 'none' contradicts kind 'abi3'.*python: none"),
        ("{kind: cpython, python_floor: '3.9'}", r"abi.python_floor: only an abi3 or 'none' wheel"),
        (
            "{kind: torch-free, python: py3}",
            r"abi.python: 'py3' is not allowed \(allowed: cpython, abi3, none\)",
        ),
    ],
)
def test_abi_errors(matrix_dir: Callable[..., Path], abi: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_matrix(matrix_dir({"pkg": package_yaml("pkg", abi=abi)}))


def test_a_versions_own_abi_is_checked_at_its_line(matrix_dir: Callable[..., Path]) -> None:
    text = package_yaml("pkg").replace(
        '    source: {sdist: pkg, sha256: "' + "a" * 64 + '"}\n',
        '    source: {sdist: pkg, sha256: "' + "a" * 64 + '"}\n    abi: {kind: torch-stable}\n',
    )
    with pytest.raises(ConfigError, match=r"pkg.yaml:5: versions\[0\].abi.min_torch: required"):
        load_matrix(matrix_dir({"pkg": text}))


def test_env_names_the_targets_cuda(matrix_dir: Callable[..., Path]) -> None:
    text = package_yaml("pkg", extra="env: {TMS_CUDA_MAJOR: '{cuda_major}', V: 'cu-{cuda}'}\n")
    (pkg,) = load_matrix(matrix_dir({"pkg": text})).packages
    assert pkg.env_for("cu130") == {"TMS_CUDA_MAJOR": "13", "V": "cu-13.0"}
    assert pkg.env_for("cu126") == {"TMS_CUDA_MAJOR": "12", "V": "cu-12.6"}


@pytest.mark.parametrize("value", ["{torch}", "{cuda_major", "x}", "{{cuda}}", "{0}"])
def test_env_refuses_any_other_brace(matrix_dir: Callable[..., Path], value: str) -> None:
    text = package_yaml("pkg", extra=f"env: {{V: '{value}'}}\n")
    with pytest.raises(ConfigError, match=r"env.V: .*a brace must be a placeholder, \{cuda\}"):
        load_matrix(matrix_dir({"pkg": text}))


def test_file_name_must_match_package_name(matrix_dir: Callable[..., Path]) -> None:
    root = matrix_dir({"other": package_yaml("pkg")})
    with pytest.raises(ConfigError, match=r"other.yaml:1: name: 'pkg' must match the file name"):
        load_matrix(root)


def test_source_key_typo_gets_a_hint(matrix_dir: Callable[..., Path]) -> None:
    text = package_yaml("pkg").replace("sha256:", "sha:")
    with pytest.raises(ConfigError, match=r"'sha' -> did you mean 'sha256'\?"):
        load_matrix(matrix_dir({"pkg": text}))


def test_missing_required_key_names_it(matrix_dir: Callable[..., Path]) -> None:
    text = package_yaml("pkg").replace("import: [pkg]\n", "")
    with pytest.raises(ConfigError, match=r"pkg.yaml:1: import: missing: this key is required"):
        load_matrix(matrix_dir({"pkg": text}))


def test_bad_source_shape_lists_the_forms(matrix_dir: Callable[..., Path]) -> None:
    text = package_yaml("pkg").replace('{sdist: pkg, sha256: "' + "a" * 64 + '"}', "{url: x}")
    root = matrix_dir({"pkg": text})
    with pytest.raises(
        ConfigError, match=r"versions\[0\]\.source: .* is not a source: use \{sdist"
    ):
        load_matrix(root)


def test_arch_override_outside_toolkit_support(matrix_dir: Callable[..., Path]) -> None:
    text = package_yaml("pkg").replace(
        "arch: {via: torch}", "arch: {via: torch, override: [{archs: '5.0;9.0'}]}"
    )
    root = matrix_dir({"pkg": text})
    with pytest.raises(ConfigError, match=r"5.0 not compiled by CUDA 13.0"):
        load_matrix(root)


@pytest.mark.parametrize(
    ("archs", "named"),
    [
        ("9.0;12.0a+PTX", "'12.0a+PTX' in '9.0;12.0a+PTX': +PTX only on a plain arch"),
        ("9.0;9.0", "duplicate arch '9.0' in '9.0;9.0'"),
        ("9.0a;9.0", "duplicate arch '9.0' in '9.0a;9.0'"),
    ],
)
def test_an_override_with_variant_ptx_or_an_sm_twice_is_one_problem(
    matrix_dir: Callable[..., Path], archs: str, named: str
) -> None:
    """Issue 36 row 7: validate names the list, no traceback."""
    text = package_yaml("pkg").replace(
        "arch: {via: torch}", f"arch: {{via: torch, override: [{{archs: '{archs}'}}]}}"
    )
    root = matrix_dir({"pkg": text})
    with pytest.raises(ConfigError, match=re.escape(named)) as caught:
        load_matrix(root)
    assert len(caught.value.problems) == 1


def test_torch_cuda_without_arch_list_is_caught(matrix_dir: Callable[..., Path]) -> None:
    arch = (Path(__file__).parents[2] / "matrix" / "arch.yaml").read_text()
    arch = arch.replace('linux_aarch64: "8.0;9.0", ', "")
    root = matrix_dir({"pkg": package_yaml("pkg")}, arch=arch)
    with pytest.raises(ConfigError, match=r"policy.12.6: no arch list for linux_aarch64"):
        load_matrix(root)


def test_import_requires_is_read(matrix_dir: Callable[..., Path]) -> None:
    good = package_yaml("pkg") + "import_requires: [numpy, 'scipy>=1.10']\n"
    matrix = load_matrix(matrix_dir({"pkg": good}))
    assert matrix.packages[0].import_requires == ("numpy", "scipy>=1.10")


def test_import_requires_entry_must_be_a_requirement(matrix_dir: Callable[..., Path]) -> None:
    bad = package_yaml("other") + "import_requires: [numpy, 'scipy >>= 1']\n"
    with pytest.raises(ConfigError, match=r"import_requires\[1\]: 'scipy >>= 1' is not a PEP 508"):
        load_matrix(matrix_dir({"other": bad}))


def test_import_gpu_lists_the_modules_that_need_a_gpu(matrix_dir: Callable[..., Path]) -> None:
    text = package_yaml("pkg", extra="import_gpu: [pkg.cuda_ops]\n")
    (pkg,) = load_matrix(matrix_dir({"pkg": text})).packages
    assert (pkg.imports, pkg.imports_gpu) == (("pkg",), ("pkg.cuda_ops",))


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("[pkg]", r"import_gpu\[0\]: 'pkg' is in both import and import_gpu"),
        ("['os; x']", r"import_gpu\[0\]: 'os; x' "),
    ],
)
def test_import_gpu_is_checked(matrix_dir: Callable[..., Path], value: str, error: str) -> None:
    text = package_yaml("pkg", extra=f"import_gpu: {value}\n")
    with pytest.raises(ConfigError, match=error):
        load_matrix(matrix_dir({"pkg": text}))


@pytest.mark.parametrize(
    ("extra", "warned"),
    [
        ("", "plans win_amd64 and linux_aarch64 with no build named there (built_on)"),
        ("built_on: {win_amd64: 'upstream CI: build.yml'}\n", "plans linux_aarch64 with no"),
        ("constraints: {platforms: [linux_x86_64]}\n", None),
        (
            "constraints: {platforms: [linux_x86_64, win_amd64]}\nbuilt_on: {win_amd64: here}\n",
            None,
        ),
    ],
)
def test_validate_warns_about_windows_and_aarch64_rows_no_build_names(
    matrix_dir: Callable[..., FarmRoot],
    capsys: pytest.CaptureFixture[str],
    extra: str,
    warned: str | None,
) -> None:
    """A new package starts narrow: warn (exit 0) until a build there is measured or cited."""
    from wheelfarm.cli import main

    root = matrix_dir({"pkg": package_yaml("pkg", extra=extra)})
    assert main(["validate", "--root", str(root.path)]) == 0
    err = capsys.readouterr().err
    if warned is None:
        assert "warning" not in err
    else:
        assert f"warning: {root.packages / 'pkg.yaml'}: {warned}" in err


def test_env_may_name_the_arch_list_and_platform_env_loads(
    matrix_dir: Callable[..., Path],
) -> None:
    text = package_yaml(
        "pkg",
        abi="{kind: torch-free}",
        extra="""\
        arch: {via: env, env: CMAKE_CUDA_ARCHITECTURES, format: cmake}
        env: {CMAKE_ARGS: '-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES={archs}'}
        platform_env:
          win_amd64: {CMAKE_GENERATOR: Ninja}
        """,
    )
    (pkg,) = load_matrix(matrix_dir({"pkg": text})).packages
    assert pkg.arch_format == "cmake"
    assert pkg.platform_env == {"win_amd64": {"CMAKE_GENERATOR": "Ninja"}}
    assert "{archs}" in pkg.env["CMAKE_ARGS"]


def test_archs_under_via_none_is_refused(matrix_dir: Callable[..., Path]) -> None:
    text = package_yaml(
        "pkg", extra="arch: {via: none}\nplatform_env: {win_amd64: {A: '-x {archs}'}}\n"
    )
    with pytest.raises(ConfigError, match=r"platform_env.win_amd64.A: .*\{archs\} names no arch"):
        load_matrix(matrix_dir({"pkg": text}))


def test_a_platform_env_brace_is_checked_as_env_is(matrix_dir: Callable[..., Path]) -> None:
    text = package_yaml("pkg", extra="platform_env: {win_amd64: {A: '{torch}'}}\n")
    with pytest.raises(ConfigError, match=r"platform_env.win_amd64.A: .*a brace must be"):
        load_matrix(matrix_dir({"pkg": text}))


def test_submodules_may_name_the_folders_the_build_needs(
    matrix_dir: Callable[..., Path],
) -> None:
    git = 'git: https://github.com/o/r, commit: "' + "0" * 40 + '"'
    text = package_yaml("pkg").replace(
        '{sdist: pkg, sha256: "' + "a" * 64 + '"}', "{" + git + ", submodules: [csrc/cutlass]}"
    )
    root = matrix_dir({"pkg": text})
    (pkg,) = load_matrix(root).packages
    assert pkg.versions[0].source.submodules == ("csrc/cutlass",)
    bad = text.replace("[csrc/cutlass]", "[csrc/cutlass, ../x]")
    (root.matrix / "packages" / "pkg.yaml").write_text(bad, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"versions\[0\].source"):
        load_matrix(root)
