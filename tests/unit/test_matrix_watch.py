"""Tests of what matrix_watch does (filed by module: tests/README.md)."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from tests.roots import REPO
from tests.unit.helpers.roots import SHA_B, _sdist
from wheelfarm.matrix.watch import (
    Row,
    Seen,
    Upstream,
    bump_package,
    cuda_pin,
    merge,
    newest_sdist,
    newest_tag,
    observe,
    observe_rows,
    parse_ls_remote,
    parse_torch_wheel,
    propose,
    tag_version,
)

ARCH = {v: {"linux_x86_64", "linux_aarch64", "win_amd64"} for v in ("12.6", "13.0", "13.2")}


TOOLKITS = {"cu126", "cu130", "cu132"}


def test_only_final_cuda_cpython_wheels_of_farm_platforms_count() -> None:
    seen = observe(
        [
            ("torch-2.15.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", False),
            ("torch-2.15.0+cu130-cp313-cp313t-manylinux_2_28_x86_64.whl", False),  # free-threaded
            ("torch-2.15.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl", False),
            ("torch-2.15.0+rocm6.4-cp312-cp312-manylinux_2_28_x86_64.whl", False),
            ("torch-2.15.0-cp312-none-macosx_11_0_arm64.whl", False),
            ("torch-2.16.0.dev20261129+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", False),
            ("torchvision-0.30.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", False),
            ("not a wheel.tar.gz", False),
            ("torch-2.15.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", True),  # yanked
        ]
    )
    assert set(seen) == {"2.15"}
    entry = seen["2.15"]
    assert str(entry.version) == "2.15.0"
    assert entry.builds == {"cu130": {"linux_x86_64"}} and entry.pythons == {"3.12"}
    assert {str(v) for v in entry.yanked} == {"2.15.1"}


def test_a_yanked_current_patch_moves_back() -> None:
    text = (REPO.matrix / "torch.yaml").read_text().replace('"2.14.1"', '"2.14.2"')
    seen = observe(
        [
            ("torch-2.14.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", False),
            ("torch-2.14.2+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", True),
        ]
    )
    proposal = propose(text, seen, arch=ARCH, toolkits=TOOLKITS)
    assert proposal.changes == ["torch 2.14.2 -> 2.14.1 (yanked)"]
    assert '"2.14.1"' in proposal.text and '"2.14.2"' not in proposal.text


def test_nothing_is_removed_and_comments_stay() -> None:
    text = (REPO.matrix / "torch.yaml").read_text()
    seen = observe([("torch-2.14.1+cu130-cp312-cp312-win_amd64.whl", False)])
    proposal = propose(text, seen, arch=ARCH, toolkits=TOOLKITS)
    assert proposal.text == text and not proposal.changed


def test_the_newest_final_sdist_with_a_hash_is_the_upstream() -> None:
    files = [
        _sdist("flash_attn-2.8.3.post2.tar.gz"),
        _sdist("flash_attn-2.8.4.tar.gz", SHA_B),  # the one
        _sdist("flash_attn-2.8.5.tar.gz", yanked=True),
        _sdist("flash_attn-2.8.6.tar.gz", None),  # no hash: the file could not be pinned
        _sdist("flash_attn-2.9.0rc1.tar.gz"),
        _sdist("flash_attn-2.9.0.dev1.tar.gz"),
        _sdist("flash_attn-3.0.0-cp312-cp312-linux_x86_64.whl"),
        _sdist("flash_attn_3-9.0.tar.gz"),  # another project
        _sdist("flash_attn-9.0+evil.tar.gz"),
        _sdist("flash_attn-.tar.gz"),
    ]
    new = newest_sdist(files, "flash-attn")
    assert new == Upstream(Version("2.8.4"), "flash_attn-2.8.4.tar.gz",
                           "https://files.invalid/flash_attn-2.8.4.tar.gz", SHA_B)  # fmt: skip
    assert newest_sdist(files[2:], "flash-attn") is None


def test_tags_with_annotated_ones_peeled() -> None:
    commit = "1" * 40
    text = (
        f"{commit}\trefs/tags/v1.0\n"
        f"{'2' * 40}\trefs/tags/v1.1\n{'3' * 40}\trefs/tags/v1.1^{{}}\n"  # annotated
        f"{'4' * 40}\trefs/heads/main\n"
        "garbage\n$(rm -rf /)\trefs/tags/x\n"
    )
    tags = parse_ls_remote(text)
    assert tags == {"v1.0": commit, "v1.1": "3" * 40}
    assert newest_tag(tags, "https://git.invalid/r") == Upstream(
        Version("1.1"), "v1.1", "https://git.invalid/r", "3" * 40
    )
    assert newest_tag({}, "https://git.invalid/r") is None


@pytest.mark.parametrize(
    ("tag", "version"),
    [("v1.2.3", "1.2.3"), ("1.2", "1.2"), ("pkg-1.2.3", "1.2.3"), ("release_2.0", "2.0"),
     ("v2.3.8.post1", "2.3.8.post1"), ("nightly", None), ("v2.0.0rc1", None),
     ("1.2.3+local", None), ("v", None), ("../1.0", None)],
)  # fmt: skip
def test_a_tag_names_a_final_release_or_nothing(tag: str, version: str | None) -> None:
    assert tag_version(tag) == (None if version is None else Version(version))


@given(st.text(max_size=2000))
def test_any_ls_remote_output_parses_to_tags_and_commits(text: str) -> None:
    for tag, commit in parse_ls_remote(text).items():
        assert re.fullmatch(r"[0-9a-f]{40}", commit) and tag and "^" not in tag
        version = tag_version(tag)
        assert version is None or not (version.is_prerelease or version.local)


@pytest.mark.parametrize(
    "path", sorted((REPO.matrix / "packages").glob("*.yaml")), ids=lambda p: p.stem
)
def test_a_bump_rewrites_the_version_and_its_pin_alone(path: Path) -> None:
    """Every shipped package file: its newest version moves, with its sha256 or commit, and
    every other byte (comments, order, a wrapped flow list) stays."""
    text = path.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    newest = max(data["versions"], key=lambda v: Version(v["version"]))
    source = newest["source"]
    if "path" in source:
        return
    pin = SHA_B if "sdist" in source else "c" * 40
    moved = bump_package(text, newest["version"], Upstream(Version("99.1"), "n", "u", pin))
    old, new = text.splitlines(), moved.splitlines()
    changed = [ln for ln in difflib.ndiff(old, new) if ln[:1] in "+-"]
    assert len(old) == len(new) and 2 <= len(changed) <= 4
    after = yaml.safe_load(moved)
    entry = next(v for v in after["versions"] if v["version"] == "99.1")
    assert entry["source"] == {**source, "sha256" if "sdist" in source else "commit": pin}
    assert [v for v in after["versions"] if v is not entry] == [
        v for v in data["versions"] if v is not newest
    ]


def test_a_bump_quotes_a_plain_value_that_would_read_as_a_number() -> None:
    text = "versions:\n  - version: v1\n    source: {git: https://g.invalid/r, commit: abc}\n"
    moved = bump_package(text, "1", Upstream(Version("2.1"), "v2.1", "u", "1" * 40))
    assert yaml.safe_load(moved)["versions"][0] == {
        "version": "2.1",
        "source": {"git": "https://g.invalid/r", "commit": "1" * 40},
    }


ARCH_watch_pep691 = {
    "13.0": {"linux_x86_64", "linux_aarch64", "win_amd64"},
    "13.2": {"linux_x86_64", "linux_aarch64", "win_amd64"},
}


TOOLKITS_watch_pep691 = {"cu130", "cu132"}


METADATA_watch_pep691 = (
    "Metadata-Version: 2.1\nName: torch\nVersion: 2.15.0\nRequires-Python: >=3.11\n"
    "Requires-Dist: filelock\n"
    'Requires-Dist: cuda-toolkit[cublas,cudart]==13.2.2; platform_system == "Linux"\n'
    'Requires-Dist: nvidia-nccl-cu13==2.30.7; platform_system == "Linux"\n'
    'Requires-Dist: optree>=0.13.0; extra == "optree"\n'
)


def old_grid() -> str:
    """torch.yaml as it was before 2.15 (its last release is 2.14.1)."""
    text = (REPO.matrix / "torch.yaml").read_text()
    return text[: text.index('  - torch: "2.15.0"')]


@pytest.mark.parametrize(
    "name",
    [
        "torch-2.12.0+cu130-cp3_12-cp3_12-manylinux_2_28_x86_64.whl",  # issue 23's InvalidVersion
        "torch-2.99.0+evil-cp312-cp312-manylinux_2_28_x86_64.whl",  # a local version, not cuXYZ
        "torch-2.99.0+cu130-cp399-cp399-manylinux_2_28_x86_64.whl",  # no CPython 3.99
        "torch-2.15.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.16.0.dev20261101-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.16.0rc1-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-latest-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.15.0-cp312-cp312-macosx_14_0_arm64.whl",
        "torch-2.15.0-cp312-abi3-manylinux_2_28_x86_64.whl",
        "torch-2.15.0-cp312.cp313-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.15.0.tar.gz",
    ],
)
def test_what_is_not_a_torch_wheel_the_farm_plans(name: str) -> None:
    assert parse_torch_wheel(name, newest_python="3.15") is None


def test_default_labelled_and_free_threaded_wheels() -> None:
    v = Version("2.15.0")
    assert parse_torch_wheel("torch-2.15.0-cp315-cp315-win_amd64.whl") == Row(
        v, None, "3.15", "win_amd64", free_threaded=False
    )
    assert parse_torch_wheel("torch-2.15.0+cu130-cp314-cp314t-manylinux_2_28_aarch64.whl") == Row(
        v, "cu130", "3.14", "linux_aarch64", free_threaded=True
    )
    # one minor past the newest Python the farm knows may be real (a release ahead of the images)
    assert parse_torch_wheel("torch-2.16.0-cp316-cp316-win_amd64.whl", newest_python="3.15")


def test_the_hostile_names_never_reach_the_proposal() -> None:
    files = [
        (f"torch-2.99.0+evil-cp312-cp312-{p}.whl", False)
        for p in ("manylinux_2_28_x86_64", "win_amd64")
    ]
    files += [("torch-2.15.0+cu130-cp399-cp399-win_amd64.whl", False)]
    files += [("torch-2.15.0+cu130-cp3_12-cp3_12-win_amd64.whl", False)]
    files += [("torch-2.15.0+cu130-cp312-cp312-win_amd64.whl", False)]
    proposal = propose(
        old_grid(),
        observe(files, newest_python="3.15"),
        arch=ARCH_watch_pep691,
        toolkits=TOOLKITS_watch_pep691,
    )
    assert "2.99" not in proposal.text and "3.99" not in proposal.text
    assert 'python: ["3.12", "3.12"]' in proposal.text


def test_the_cuda_a_default_wheel_pins_on_each_platform() -> None:
    assert cuda_pin(METADATA_watch_pep691, "linux_x86_64") == (
        "cu132",
        'cuda-toolkit[cublas,cudart]==13.2.2; platform_system == "Linux"',
    )
    assert cuda_pin(METADATA_watch_pep691, "win_amd64") is None  # the marker says Linux only
    older = 'Requires-Dist: nvidia-cuda-runtime-cu12 (==12.1.105) ; platform_machine == "x86_64"'
    assert cuda_pin(older, "linux_x86_64") == (
        "cu121",
        'nvidia-cuda-runtime-cu12 (==12.1.105) ; platform_machine == "x86_64"',
    )
    assert cuda_pin(older, "linux_aarch64") is None
    assert cuda_pin("Requires-Dist: cuda-toolkit>=13", "linux_x86_64") is None  # not a pin


@given(st.text(max_size=400))
def test_cuda_pin_reads_any_text_without_raising(text: str) -> None:
    why = "has no tag"  # the one ValueError: a pin no tag can write
    try:
        pin = cuda_pin(text, "linux_x86_64")
    except ValueError as exc:
        why, pin = str(exc), None
    assert "has no tag" in why
    assert pin is None or pin[0].startswith("cu")


def test_a_pin_to_cuda_13_99_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"CUDA 13\.99\.1 has no tag"):
        cuda_pin(METADATA_watch_pep691.replace("13.2.2", "13.99.1"), "linux_x86_64")


@given(
    st.from_regex(
        r"torch-2\.1[0-9]\.[0-9](\+[a-z0-9_.]{0,8})?-cp[0-9_]{1,5}t?-[a-z0-9_]{1,8}-"
        r"(manylinux_2_28_x86_64|win_amd64|any)\.whl",
        fullmatch=True,
    )
)
def test_a_wheel_name_parses_or_is_refused_never_raises(name: str) -> None:
    row = parse_torch_wheel(name, newest_python="3.15")
    if row is not None:
        assert row.cuda is None or row.cuda.startswith("cu")
        minor = int(row.python.split(".")[1])
        assert minor <= 16 and row.version.local is None  # 3.15 + 1


def test_two_indexes_merge_and_the_newest_patch_wins() -> None:
    v0, v1 = Version("2.15.0"), Version("2.15.1")
    plain, threaded = {"free_threaded": False}, {"free_threaded": True}
    pypi = observe_rows([(Row(v1, "cu132", "3.15", "linux_x86_64", **plain), False)])
    pytorch = observe_rows(
        [
            (Row(v0, "cu130", "3.11", "win_amd64", **plain), False),
            (Row(v1, "cu130", "3.12", "win_amd64", **plain), False),
            (Row(v1, "cu130", "3.14", "win_amd64", **threaded), False),
        ]
    )
    merged = merge(pytorch, pypi)["2.15"]
    assert merged.version == v1
    assert merged.builds == {"cu130": {"win_amd64"}, "cu132": {"linux_x86_64"}}
    assert merged.pythons == {"3.12", "3.15"} and merged.free_threaded == {"3.14t"}


def test_only_minors_past_the_grid_are_added() -> None:
    seen = {
        "2.3": Seen(Version("2.3.1"), {"cu121": {"linux_x86_64"}}, {"3.12"}),
        "2.15": Seen(Version("2.15.0"), {"cu132": {"linux_x86_64"}}, {"3.11", "3.15"}),
    }
    proposal = propose(
        old_grid(), seen, arch=ARCH_watch_pep691, toolkits={*TOOLKITS_watch_pep691, "cu121"}
    )
    assert '"2.3.1"' not in proposal.text  # the grid starts at 2.4 on purpose
    assert proposal.text.endswith(
        '  - torch: "2.15.0"\n    python: ["3.11", "3.15"]\n    builds: {cu132: [linux_x86_64]}\n'
    )


def test_the_cuda_pypi_pins_is_proposed_as_pypi_where_it_is_planned() -> None:
    """build --local reads `pypi` to pick a torch whose PyPI wheel fits: a proposed release
    carries it, except for a build the farm cannot plan (validate would refuse the pin)."""
    seen = {
        "2.15": Seen(
            Version("2.15.0"),
            {"cu132": {"linux_x86_64", "linux_aarch64"}, "cu134": {"win_amd64"}},
            {"3.11", "3.15"},
            pypi={"linux_aarch64": "cu132", "linux_x86_64": "cu132", "win_amd64": "cu134"},
        )
    }
    proposal = propose(old_grid(), seen, arch=ARCH_watch_pep691, toolkits=TOOLKITS_watch_pep691)
    assert proposal.text.endswith(
        "    builds: {cu132: [linux_x86_64, linux_aarch64]}\n"
        "    pypi: {linux_x86_64: cu132, linux_aarch64: cu132}\n"
    )
    assert "PyPI's wheel cu132 on linux_x86_64, cu132 on linux_aarch64" in proposal.changes[0]


def test_a_new_patch_adds_the_pins_the_release_lacks_and_keeps_the_rest() -> None:
    text = old_grid() + (
        '  - torch: "2.15.0"\n    python: ["3.11", "3.15"]\n'
        "    builds: {cu132: [linux_x86_64, linux_aarch64]}\n    pypi: {linux_x86_64: cu132}\n"
    )
    seen = {
        "2.15": Seen(
            Version("2.15.1"),
            {"cu132": {"linux_x86_64", "linux_aarch64"}},
            {"3.11", "3.15"},
            pypi={"linux_aarch64": "cu132"},
        )
    }
    proposal = propose(text, seen, arch=ARCH_watch_pep691, toolkits=TOOLKITS_watch_pep691)
    assert "    pypi: {linux_x86_64: cu132, linux_aarch64: cu132}\n" in proposal.text
    assert "torch 2.15.1: PyPI's wheel cu132 on linux_x86_64, cu132 on linux_aarch64" in (
        proposal.changes
    )
    again = propose(proposal.text, seen, arch=ARCH_watch_pep691, toolkits=TOOLKITS_watch_pep691)
    assert not again.changed  # the pins once written are no change
