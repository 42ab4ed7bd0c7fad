from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.unit.helpers.roots import (
    BASE,
    HOSTILE,
    MATRIX,
    TORCH_FREE,
    BASE_farm_requires,
    MakeRoot,
    _root,
    _root_distribution,
    package_yaml,
)
from wheelfarm.core.errors import ConfigError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix


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


def test_import_may_be_empty_when_every_module_needs_a_gpu(
    matrix_dir: Callable[..., Path],
) -> None:
    text = package_yaml("pkg", extra="import: []\nimport_gpu: [pkg]\n")
    (pkg,) = load_matrix(matrix_dir({"pkg": text})).packages
    assert (pkg.imports, pkg.imports_gpu) == ((), ("pkg",))


def test_import_and_import_gpu_both_empty_are_refused(matrix_dir: Callable[..., Path]) -> None:
    text = package_yaml("pkg", extra="import: []\n")
    with pytest.raises(ConfigError, match=r"import: is empty: name a module the import check"):
        load_matrix(matrix_dir({"pkg": text}))


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


@pytest.mark.parametrize(
    ("arch", "key"),
    [
        ("arch: {via: none, override: [{archs: '9.0'}]}\n", "arch.override"),
        ("arch: {via: none, env: PKG_ARCHS}\n", "arch.env"),
    ],
)
def test_via_none_takes_no_arch_list(matrix_dir: Callable[..., Path], arch: str, key: str) -> None:
    root = matrix_dir({"pkg": package_yaml("pkg", abi=TORCH_FREE, extra=arch)})
    with pytest.raises(ConfigError, match=rf"pkg.yaml:\d+: {key}: not allowed when via is 'none'"):
        load_matrix(root)


def test_unknown_via_lists_none_among_the_allowed(matrix_dir: Callable[..., Path]) -> None:
    root = matrix_dir({"pkg": package_yaml("pkg", extra="arch: {via: nothing}\n")})
    with pytest.raises(
        ConfigError,
        match=r"arch.via: 'nothing' is not allowed \(allowed: torch, env, patch, none\)",
    ):
        load_matrix(root)


def test_an_unpinned_or_unknown_image_is_refused(matrix_dir: Callable[..., FarmRoot]) -> None:
    farm = (REPO.matrix / "farm.yaml").read_text()
    pinned = MATRIX.farm.platforms["linux_x86_64"].container
    unpinned_farm = farm.replace(pinned, "quay.io/pypa/manylinux_2_28_x86_64:2026.09.30-1")
    matrix = load_matrix(_root(matrix_dir, farm=unpinned_farm))
    with pytest.raises(ConfigError) as err:
        expand(matrix)
    assert "manylinux_2_28_x86_64:2026.09.30-1' is not pinned by digest" in str(err.value)
    assert "images has no facts for 'quay.io/pypa/manylinux_2_28_x86_64:2026.09.30-1'" in str(
        err.value
    )


def test_a_schema_error_names_the_file_and_key(matrix_dir: Callable[..., FarmRoot]) -> None:
    root = matrix_dir({"demo-pkg": package_yaml()})
    path = root.matrix / "compat.yaml"
    path.write_text(path.read_text().replace("gcc_max: 11", "gcc_max: eleven"))
    with pytest.raises(ConfigError, match=r"compat.yaml:\d+: cuda.11.8.gcc_max: 'eleven' is not"):
        load_matrix(root)


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ('distribution: "base-cu"\n', "has no {cuda_tag}: it would be one name for every CUDA"),
        ('distribution: "base-{cuda_tag}-"\n', "is no distribution name once {cuda_tag} is cu130"),
        ('distribution: "base-{cuda}"\n', "does not match"),
        ("farm_build_requires: [user]\n", "'user' is not in farm_requires: add it there too"),
    ],
)
def test_the_loader_names_a_bad_value(matrix_dir: MakeRoot, extra: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_matrix(_root_distribution(matrix_dir, base=extra))
    assert problem in str(info.value)
    assert "base.yaml" in str(info.value)


@pytest.mark.parametrize(
    ("name", "extra", "key"),
    [
        ("newcomer", 'distribution: "Base_{cuda_tag}"\n', "distribution"),  # cumm's, respelled
        ("base-cu130", "", "distribution"),  # a file named as base's per-CUDA wheel
    ],
)
def test_two_files_of_one_wheel_name_are_refused_naming_both(
    matrix_dir: MakeRoot, name: str, extra: str, key: str
) -> None:
    """Issue 36: a second file claiming `base-cu130` would give its builds base's ids, and
    `build` of base's id would build the newcomer's source."""
    user = BASE + "farm_requires: [base]\nfarm_build_requires: [base]\n"
    root = matrix_dir(
        {
            "base": package_yaml("base", extra=BASE + 'distribution: "base-{cuda_tag}"\n'),
            "user": package_yaml("user", extra=user + 'distribution: "user-{cuda_tag}"\n'),
            name: package_yaml(name, extra=BASE + extra),
        }
    )
    with pytest.raises(ConfigError) as info:
        load_matrix(root)
    (line,) = [p for p in str(info.value).splitlines() if "wheel name" in p]
    files = sorted([f"{name}.yaml", "base.yaml"])  # the later file is refused, naming the first
    wanted = rf"{files[1]}: {key}: wheel name 'base-cu1\d+' is also {files[0]}'s: one package file"
    assert re.search(wanted.replace(".yaml", r"\.yaml"), line)


def test_the_loader_refuses_a_cycle(matrix_dir: MakeRoot) -> None:
    root = matrix_dir(
        {
            "a": package_yaml("a", extra=BASE_farm_requires + "farm_requires: [b]\n"),
            "b": package_yaml("b", extra=BASE_farm_requires + "farm_requires: [c]\n"),
            "c": package_yaml("c", extra=BASE_farm_requires + "farm_requires: [a]\n"),
        }
    )
    with pytest.raises(ConfigError) as info:
        load_matrix(root)
    assert "a cycle: a -> b -> c -> a" in str(info.value)


def test_the_shipped_tinycudann_file_asks_for_the_layout() -> None:
    packages = {p.name: p for p in load_matrix(REPO).packages}
    assert packages["tinycudann"].one_arch_per_binary
    assert not packages["simple-knn"].one_arch_per_binary


def test_the_loader_takes_one_binary_layout(matrix_dir: MakeRoot) -> None:
    both = "arch: {via: torch, one_arch_per_binary: true, some_archs_per_binary: true}\n"
    some = "arch: {via: torch, some_archs_per_binary: true}\n"
    root = matrix_dir({"some": package_yaml("some", extra=some)})
    (package,) = load_matrix(root).packages
    assert package.some_archs_per_binary
    assert not package.one_arch_per_binary
    (root.packages / "some.yaml").write_text(package_yaml("some", extra=both), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"arch.some_archs_per_binary: not with one_arch_per"):
        load_matrix(root)


GIT = 'git: https://github.com/o/r, commit: "' + "0" * 40 + '"'


SDIST = 'sdist: pkg, sha256: "' + "a" * 64 + '"'


def _package(source: str) -> str:
    """A package file whose one version has `source` (a YAML flow mapping's inside)."""
    body = package_yaml("pkg")
    start, end = body.index("versions:"), body.index("abi:")
    return f'{body[:start]}versions:\n  - {{version: "1.0", source: {{{source}}}}}\n{body[end:]}'


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
