"""Tests of what load_values does (filed by module: tests/README.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.requirements import Requirement

from tests.roots import REPO
from tests.unit.helpers.install import HOSTILE_REQUIREMENTS
from tests.unit.helpers.roots import USER, BASE_farm_requires, MakeRoot, package_yaml
from tests.unit.helpers.wheels import DEEP, GOOD, _house_hostile_data, _index
from wheelfarm.core.errors import ConfigError
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.load import load_matrix, module_problem, requirement_problem

HOSTILE_IMPORTS = [
    'os; open("PWNED","w").write("ran")',
    "flash_attn\n",
    "__import__('os').system('id')",
    "pkg..mod",
    "-c",
    "",
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


def test_the_schema_refuses_code_and_options_too() -> None:
    """The package schema (what an editor checks as the file is typed) has the same shapes: an
    import entry that is code, a requirement that is an option or an editable. (A name with a
    trailing newline, or a URL requirement, passes its pattern; the loader refuses those.)"""
    from jsonschema import Draft202012Validator

    schema = json.loads((REPO.matrix / "schema" / "package.schema.json").read_text())
    fields = schema["properties"]
    for module in (m for m in HOSTILE_IMPORTS if not m.endswith("\n")):
        assert not Draft202012Validator(fields["import"]).is_valid([module]), module
    for key in ("build_requires", "import_requires"):
        for requirement in HOSTILE_REQUIREMENTS[:3]:
            assert not Draft202012Validator(fields[key]).is_valid([requirement]), requirement
        assert Draft202012Validator(fields[key]).is_valid(["ninja>=1.11"])
    assert Draft202012Validator(fields["import"]).is_valid(["pkg._C"])


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


def test_verify_flags_a_symlink_member_listed_in_record(tmp_path: Path) -> None:
    import stat
    import zipfile

    from ghsim.synthetic import elf_with_fatbin
    from tests.unit.helpers.roots import PYCUDA
    from wheelfarm.builder.build import expectation
    from wheelfarm.builder.target import resolve
    from wheelfarm.builder.verify import verify_static
    from wheelfarm.core.wheelfile import write_wheel
    from wheelfarm.matrix.expand import expand

    info = "pycuda-2026.1+cu130.dist-info"
    files = {
        "pycuda/__init__.py": b"",
        "pycuda/_driver.cpython-312-x86_64-linux-gnu.so": elf_with_fatbin(b""),
        "pycuda/secrets": b"/etc/shadow",
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: pycuda\nVersion: 2026.1+cu130\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nTag: cp312-cp312-manylinux_2_28_x86_64\n",
    }
    plain = tmp_path / "plain.whl"
    write_wheel(plain, files, info)
    wheel = tmp_path / "pycuda-2026.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(wheel, "w") as dst:
        for member in src.infolist():
            if member.filename == "pycuda/secrets":
                member.external_attr = (stat.S_IFLNK | 0o777) << 16
            dst.writestr(member, src.read(member))
    matrix = load_matrix(REPO)
    (problem,) = verify_static(wheel, expectation(resolve(matrix, expand(matrix), PYCUDA))).problems
    assert problem == (
        "pycuda/secrets: a symbolic link member (to '/etc/shadow'); store the file itself"
    )


def test_a_full_disk_is_one_line_and_the_old_site_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    from wheelfarm.core.errors import SiteError
    from wheelfarm.index import fs

    house, out = _house_hostile_data(tmp_path), tmp_path / "site"
    _index(house, out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (house / GOOD.replace("cp312-cp312", "cp311-cp311")).unlink()  # a change to write
    from tests.unit.helpers.wheels import wheel

    wheel(house, GOOD.replace("cp312-cp312", "cp313-cp313"))
    real = fs.write

    def full(path: str, data: bytes) -> None:
        if path.endswith(".metadata"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        real(path, data)

    monkeypatch.setattr(fs, "write", full)
    with pytest.raises(SiteError) as caught:
        _index(house, out, lock_timeout=0)
    (line,) = str(caught.value).splitlines()
    assert "No space left on device" in line
    assert "the old site is unchanged" in line
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["house", "site", "site.lock"]


def test_a_second_writer_waits_up_to_its_bound_then_names_the_holder(tmp_path: Path) -> None:
    import os
    import socket

    from wheelfarm.core.errors import SiteError
    from wheelfarm.index.lock import site_lock

    house, out = _house_hostile_data(tmp_path), tmp_path / "site"
    with site_lock(out.resolve()):
        with pytest.raises(SiteError) as caught:
            _index(house, out, lock_timeout=0.3)
        (line,) = str(caught.value).splitlines()
        assert f"held by pid {os.getpid()} on {socket.gethostname()} since " in line
        assert "waited 0.3 s" in line and "--lock-timeout" in line
        assert not out.exists()  # nothing written
    _index(house, out, lock_timeout=0.3)
    assert (out / "packages.json").is_file()


def test_bytes_written_over_a_wheelhouse_wheel_never_change_the_site_under_its_hash(
    tmp_path: Path,
) -> None:
    import hashlib
    import os

    house, out = _house_hostile_data(tmp_path), tmp_path / "site"
    _index(house, out)
    wheel = house / GOOD.replace("cp312-cp312", "cp310-cp310")
    served = (out / "files" / wheel.name).read_bytes()
    st = wheel.stat()
    data = bytearray(wheel.read_bytes())
    data[-30] ^= 1  # same size; then the old mtime put back, as `cp -p` does
    with wheel.open("r+b") as fh:  # written in place: the same inode
        fh.write(data)
    os.utime(wheel, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (out / "files" / wheel.name).read_bytes() == served  # a copy, not a link
    _index(house, out)
    manifest = json.loads((out / "packages.json").read_text())
    (listed,) = [w for w in manifest["wheels"] if w["filename"] == wheel.name]
    now = (out / "files" / wheel.name).read_bytes()
    assert now == bytes(data)  # the ctime told the rerun: read again
    assert listed["sha256"] == hashlib.sha256(now).hexdigest()


def test_a_deep_packages_json_is_one_line_for_the_site_and_the_planner(tmp_path: Path) -> None:
    from wheelfarm.core.errors import SiteError, UsageError
    from wheelfarm.matrix.plan import existing_build_ids

    house, out = _house_hostile_data(tmp_path), tmp_path / "site"
    _index(house, out)
    manifest = out / "packages.json"
    text = manifest.read_text()
    manifest.write_text(text.replace('"wheels":[', f'"wheels":[{DEEP},', 1))
    (house / GOOD.replace("cp312-cp312", "cp311-cp311")).unlink()  # a change: the site is read
    with pytest.raises(SiteError, match=r"not a wheelfarm packages\.json") as caught:
        _index(house, out)
    assert len(str(caught.value).splitlines()) == 1
    manifest.write_text(DEEP)
    with pytest.raises(UsageError, match="JSON nested 100000 deep, more than the 64 allowed"):
        existing_build_ids(manifest)


def test_a_deep_build_record_is_one_line_for_index_publish_and_rebuild(tmp_path: Path) -> None:
    from wheelfarm import farm
    from wheelfarm.core.errors import SiteError, UsageError
    from wheelfarm.github.artifacts import record_problems

    house, out = _house_hostile_data(tmp_path), tmp_path / "site"
    record = house / f"{GOOD.replace('cp312-cp312', 'cp310-cp310')}.build.json"
    record.write_text(DEEP)
    with pytest.raises(SiteError, match="JSON nested 100000 deep") as caught:
        _index(house, out)
    assert "rebuild the wheel or delete the record" in str(caught.value)
    wheel = house / record.name.removesuffix(".build.json")
    (problem,) = record_problems(wheel, farm.build_id_from_wheel(wheel.name))
    assert "JSON nested 100000 deep" in problem
    with pytest.raises(UsageError, match="JSON nested 100000 deep"):
        farm._read_record(wheel, record)


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("[nope]", "'nope' is no package of this farm"),
        ("[user]", "'user' is this package itself"),
        ("[base, base]", "non-unique"),
        ("['../x']", "does not match"),
    ],
)
def test_the_loader_names_a_bad_requirement(matrix_dir: MakeRoot, given: str, problem: str) -> None:
    root = matrix_dir(
        {
            "base": package_yaml("base", extra=BASE_farm_requires),
            "user": package_yaml("user", extra=USER + f"farm_requires: {given}\n"),
        }
    )
    with pytest.raises(ConfigError) as info:
        load_matrix(root)
    assert problem in str(info.value)
    assert "user.yaml" in str(info.value)


VERSION_KEYS = """\
    versions:
      - version: "1.0.0"
        source: {sdist: pkg, sha256: "%s"}
        torch: %s
        env: {SUFFIX: %s}
    arch:
      via: torch
      override: [{version: %s, archs: "8.0;9.0"}]
    """


@pytest.mark.parametrize(
    ("torch", "suffix", "version", "problem"),
    [
        ("'2.8'", "'.post3'", "'<2'", r"pkg.yaml:8: versions\[0\].torch: '2.8' is not a PEP 440"),
        (
            "'<2.10'",
            "'{version}'",
            "'<2'",
            r"pkg.yaml:9: versions\[0\].env.SUFFIX: '\{version\}': a brace",
        ),
        (
            "'<2.10'",
            "'.post3'",
            "'post3'",
            r"pkg.yaml:12: arch.override\[0\].version: 'post3' is not",
        ),
    ],
)
def test_a_versions_torch_env_and_an_overrides_version_are_checked_at_their_line(
    matrix_dir: MakeRoot, torch: str, suffix: str, version: str, problem: str
) -> None:
    text = package_yaml("pkg", extra=VERSION_KEYS % ("a" * 64, torch, suffix, version))
    with pytest.raises(ConfigError, match=problem) as caught:
        load_matrix(matrix_dir({"pkg": text}))
    assert len(caught.value.problems) == 1


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(st.characters(exclude_categories=["Cs"]), max_size=30))  # lone surrogates: YAML's
def test_any_text_as_a_versions_torch_loads_or_is_one_problem(
    matrix_dir: MakeRoot, tmp_path: Path, text: str
) -> None:
    """Hostile input: a version's torch range from any text is a specifier or one line that
    names it (one farm root, its package file rewritten for each example)."""
    made = FarmRoot(tmp_path / "farm")
    root = made if made.matrix.is_dir() else matrix_dir({"pkg": package_yaml("pkg")})
    quoted = yaml.safe_dump(text, default_style='"', width=1000).strip()  # YAML's own escapes
    extra = VERSION_KEYS % ("a" * 64, quoted, "'.post3'", "'<2'")
    (root.matrix / "packages" / "pkg.yaml").write_text(package_yaml("pkg", extra=extra))
    problems = _problems(root)
    assert problems == [] or (len(problems) == 1 and "versions[0].torch" in problems[0])


def _problems(root: FarmRoot) -> list[str]:
    """What loading `root` finds wrong: no problem, or each as its one line."""
    try:
        load_matrix(root)
    except ConfigError as exc:
        return list(exc.problems)
    return []
