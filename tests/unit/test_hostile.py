"""Hostile and careless input (issue 11): each row gets a one-line error that names the file,
key or value and the fix, with an exit code from the error hierarchy; nothing is written outside
the work folder and nothing from the data is executed."""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import tarfile
import time
import zipfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

from tests.roots import REPO
from tests.unit.test_index_owned import wheelhouse_catalog
from wheelfarm.builder.build import expectation
from wheelfarm.builder.relabel import relabel
from wheelfarm.builder.source import _extract
from wheelfarm.builder.target import resolve
from wheelfarm.builder.verify import Expectation, verify_static
from wheelfarm.cli import main
from wheelfarm.core.archive import Limits, MiB
from wheelfarm.core.errors import BuildError, ConfigError, PlanError, SiteError, UsageError
from wheelfarm.core.root import FarmRoot
from wheelfarm.core.wheelfile import write_wheel
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix
from wheelfarm.matrix.reader import MAX_DEPTH, MAX_FILE_BYTES

from .conftest import package_yaml

MakeRoot = Callable[..., FarmRoot]
SHA = "a" * 64


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


# --- the maintainers' YAML ---------------------------------------------------------------------


def test_duplicate_key_is_refused_with_both_lines(
    matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    text = package_yaml("pkg") + 'versions:\n  - {version: "2.0", source: {path: demo}}\n'
    root = matrix_dir({"pkg": text})
    _one_problem(root, capsys, "pkg.yaml:9: duplicate key 'versions' (first on line 2)", "keep one")


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


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5), f"nested deeper than {MAX_DEPTH} levels"),
        ("12.8: x\n", "key '12.8' is not a string: quote it"),
        ("a: 2024-13-01\n", "'2024-13-01' cannot be read as a timestamp (month must be in 1..12)"),
        ("a: [1, 2\n", "YAML syntax error: while parsing a flow sequence: expected ',' or ']'"),
        ("a: 1\n---\nb: 2\n", "YAML syntax error: expected a single document"),
    ],
    ids=["deep", "float key", "bad date", "syntax", "two documents"],
)
def test_yaml_the_farm_refuses(
    body: str, message: str, matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    _one_problem(matrix_dir({"pkg": body}), capsys, "pkg.yaml:", message)


def test_bad_utf8_names_the_byte(matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]) -> None:
    root = matrix_dir({"pkg": package_yaml("pkg")})
    (root.matrix / "torch.yaml").write_bytes(b"index_url: \xff\xfe\n")
    _one_problem(root, capsys, "torch.yaml: not UTF-8 (invalid start byte at byte 11)")


def test_a_file_past_the_size_limit_is_not_parsed(
    matrix_dir: MakeRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    text = package_yaml("pkg") + "#" * MAX_FILE_BYTES
    _one_problem(matrix_dir({"pkg": text}), capsys, f"larger than {MAX_FILE_BYTES} bytes")


def test_too_many_problems_are_cut_with_a_count(matrix_dir: MakeRoot) -> None:
    keys = "".join(f"bogus{i}: 1\n" for i in range(300))
    with pytest.raises(ConfigError) as info:
        load_matrix(matrix_dir({"pkg": package_yaml("pkg") + keys}))
    assert len(info.value.problems) == 201
    assert info.value.problems[-1] == "... and 100 more problems: fix these first"


def _versions(*items: str) -> str:
    body = package_yaml("pkg")
    start, end = body.index("versions:"), body.index("abi:")
    return body[:start] + "versions:\n" + "".join(f"  - {i}\n" for i in items) + body[end:]


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
    ("git", "commit", "message"),
    [
        ("--upload-pack=touch /tmp/pwned", "0" * 40, "https only"),
        ("ext::sh -c touch% /tmp/pwned", "0" * 40, "https only"),
        ("file:///etc", "0" * 40, "https only"),
        ("https://user:token@github.com/o/r", "0" * 40, "no credentials"),
        ("https://-oProxyCommand=x/o/r", "0" * 40, "a plain host name"),
        ("https://github.com/o/r", "main", "40 lowercase hex digits"),
    ],
    ids=["option", "ext transport", "file", "credentials", "host", "branch"],
)
def test_git_sources_are_https_urls_and_full_commits(
    git: str,
    commit: str,
    message: str,
    matrix_dir: MakeRoot,
    capsys: pytest.CaptureFixture[str],
) -> None:
    item = f'{{version: "1.0", source: {{git: "{git}", commit: "{commit}"}}}}'
    root = matrix_dir({"pkg": _versions(item)})
    _one_problem(root, capsys, "pkg.yaml:3: versions[0].source.", message)


def _replace(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


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


# --- the command line ----------------------------------------------------------------------------


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


# --- sdists ----------------------------------------------------------------------------------


def _tar(path: Path, *members: tuple[tarfile.TarInfo, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tf.addfile(info, io.BytesIO(data))
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (_member("pkg/../../evil"), "member 'pkg/../../evil' climbs out of the folder with '..'"),
        (_member("/etc/evil"), "member '/etc/evil' is an absolute path"),
        (_member("pkg/link", tarfile.SYMTYPE, "/etc/passwd"), "member 'pkg/link' is a symlink"),
        (_member("pkg/hard", tarfile.LNKTYPE, "pkg/setup.py"), "member 'pkg/hard' is a hardlink"),
        (_member("pkg/fifo", tarfile.FIFOTYPE), "member 'pkg/fifo' is a device"),
    ],
    ids=["dotdot", "absolute", "symlink", "hardlink", "fifo"],
)
def test_unsafe_tar_member_is_one_build_error_naming_it(
    member: tarfile.TarInfo, message: str, tmp_path: Path
) -> None:
    archive = _tar(tmp_path / "pkg-1.0.tar.gz", (_member("pkg/setup.py"), b"x"), (member, b"x"))
    with pytest.raises(BuildError) as info:
        _extract(archive, tmp_path / "work" / "src")
    text = str(info.value)
    assert text.startswith(f"cannot unpack pkg-1.0.tar.gz: {message}")
    assert "\n" not in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg-1.0.tar.gz", "work"]


def test_unsafe_zip_member_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    archive = tmp_path / "pkg-1.0.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("pkg/setup.py", "x")
        zf.writestr("../evil", "x")
    with pytest.raises(BuildError, match=r"member '\.\./evil' climbs out"):
        _extract(archive, tmp_path / "src")
    assert list((tmp_path / "src").iterdir()) == []


def test_a_good_sdist_unpacks_with_its_exec_bits(tmp_path: Path) -> None:
    script = _member("pkg/build.sh")
    script.mode = 0o755
    archive = _tar(tmp_path / "pkg-1.0.tar.gz", (_member("pkg", tarfile.DIRTYPE), b""),
                   (_member("./pkg/setup.py"), b"setup()"), (script, b"#!/bin/sh\n"))  # fmt: skip
    tree = _extract(archive, tmp_path / "src")
    assert tree == tmp_path / "src" / "pkg"
    assert (tree / "setup.py").read_text() == "setup()"
    assert (tree / "build.sh").stat().st_mode & 0o100


class _Zeros(io.RawIOBase):
    """`size` zero bytes, read without holding them in memory."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def test_tar_bomb_200kb_to_200mb_is_refused_at_its_header(tmp_path: Path) -> None:
    archive = tmp_path / "pkg-1.0.tar.gz"
    info = _member("pkg/zeros")
    info.size = 200 * MiB
    with tarfile.open(archive, "w:gz") as tf:
        tf.addfile(info, _Zeros(info.size))
    assert archive.stat().st_size < 250_000
    with pytest.raises(
        BuildError, match=r"unpacks to more than 67108864 bytes from \d+ \(at 'pkg/zeros'\)"
    ):
        _extract(archive, tmp_path / "src")
    assert sum(p.stat().st_size for p in (tmp_path / "src").rglob("*")) == 0


def test_zip_bomb_300kb_to_300mb_is_refused_before_it_is_read(tmp_path: Path) -> None:
    archive = tmp_path / "pkg-1.0.zip"
    with (
        zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf,
        zf.open("pkg/zeros", "w", force_zip64=True) as out,
    ):
        shutil.copyfileobj(_Zeros(300 * MiB), out, MiB)
    assert archive.stat().st_size < 350_000
    with pytest.raises(BuildError, match="refused as a decompression bomb"):
        _extract(archive, tmp_path / "src")


def test_member_count_and_size_limits_by_parameter(tmp_path: Path) -> None:
    many = [(_member(f"pkg/f{i}"), b"") for i in range(11)]
    with pytest.raises(BuildError, match=r"more than 10 members \(at 'pkg/f10'\)"):
        _extract(_tar(tmp_path / "a.tar.gz", *many), tmp_path / "a", Limits(max_members=10))
    small = Limits(max_bytes=1000, ratio_floor=0)
    with pytest.raises(BuildError, match="unpacks to more than 1000 bytes"):
        _extract(
            _tar(tmp_path / "b.tar.gz", (_member("pkg/x"), b"y" * 1001)), tmp_path / "b", small
        )


def test_a_long_name_header_counts_against_the_stream_cap(tmp_path: Path) -> None:
    """tarfile reads a PAX header whole, before the member is seen: the stream is capped."""
    info = _member("pkg/" + "n" * 200_000)
    archive = _tar(tmp_path / "pkg-1.0.tar.gz", (info, b""))
    limits = Limits(max_bytes=10_000, max_members=10, ratio_floor=0)
    with pytest.raises(BuildError, match="unpacks to more than 20240 bytes, headers included"):
        _extract(archive, tmp_path / "src", limits)


@pytest.mark.parametrize(
    ("name", "data"),
    [("pkg-1.0.tar.gz", b"not gzip at all"), ("pkg-1.0.zip", b"PK\x03\x04 truncated")],
)
def test_a_damaged_sdist_is_a_build_error(name: str, data: bytes, tmp_path: Path) -> None:
    (tmp_path / name).write_bytes(data)
    with pytest.raises(BuildError, match=rf"^cannot unpack {name}: .*check that version upstream"):
        _extract(tmp_path / name, tmp_path / "src")


# --- wheels ----------------------------------------------------------------------------------

DEMO = "wheelfarm-demo-0.1.0-cu130torch2.14-cp312-linux_x86_64"  # a build of the shipped grid
NAME = "wheelfarm_demo-0.1.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl"
INFO = "wheelfarm_demo-0.1.0+cu130torch2.14.dist-info"
METADATA = b"Metadata-Version: 2.1\nName: wheelfarm-demo\nVersion: 0.1.0+cu130torch2.14\n"


@cache
def _want() -> Expectation:
    """What verify expects of the demo's build for cu130, torch 2.14, CPython 3.12 on Linux."""
    matrix = load_matrix(REPO)
    return expectation(resolve(matrix, expand(matrix), DEMO))


WHEEL = b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp312-cp312-linux_x86_64\n"


def _wheel(folder: Path, **extra: bytes | None) -> Path:
    """A farm wheel with `extra` members added (or, given None, left out)."""
    files: dict[str, bytes | None] = {
        "wheelfarm_demo/__init__.py": b"",
        f"{INFO}/METADATA": METADATA,
        f"{INFO}/WHEEL": WHEEL,
        **extra,
    }
    folder.mkdir(parents=True, exist_ok=True)
    write_wheel(folder / NAME, {k: v for k, v in files.items() if v is not None}, INFO)
    return folder / NAME


def _problems(wheel: Path) -> list[str]:
    return [
        p for p in verify_static(wheel, _want()).problems if "no shared object carries" not in p
    ]


def test_a_clean_wheel_has_no_problem_but_its_missing_device_code(tmp_path: Path) -> None:
    assert _problems(_wheel(tmp_path)) == []


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"torch/lib/libc10.so": b"\0"}, "ships torch/lib/libc10.so: torch/CUDA provide it"),
        ({"wheelfarm_demo/libcudart.so.13": b"\0"}, "ships wheelfarm_demo/libcudart.so.13"),
        ({"../../evil.py": b""}, "member '../../evil.py' climbs out of the folder with '..'"),
        ({"/etc/evil.py": b""}, "member '/etc/evil.py' is an absolute path"),
        ({f"{INFO}/WHEEL": None}, f"{INFO}/WHEEL is missing"),
        ({f"{INFO}/WHEEL": b"Wheel-Version: 1.0\nTag: py3-none-any\n"}, "tags ['py3-none-any'] differ"),
        ({f"{INFO}/WHEEL": WHEEL.replace(b"1.0", b"2.0", 1)}, "Wheel-Version '2.0', installers read 1.x"),
        ({"wheelfarm_demo/_C.so": b"\x7fELF\x02\x01\x01" + b"\0" * 20}, "wheelfarm_demo/_C.so: unreadable binary: truncated ELF"),
    ],
    ids=["libc10 outside .libs", "cudart", "dotdot", "absolute", "no WHEEL", "WHEEL tags", "WHEEL version", "truncated ELF"],
)  # fmt: skip
def test_verify_fails_a_hostile_wheel(
    extra: dict[str, bytes | None], problem: str, tmp_path: Path
) -> None:
    problems = _problems(_wheel(tmp_path, **extra))
    assert any(problem in p for p in problems), problems


def test_verify_reads_no_member_of_a_wheel_past_the_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("wheelfarm.builder.verify.WHEEL_LIMITS", Limits(max_members=3))
    problems = _problems(
        _wheel(tmp_path, **{"wheelfarm_demo/a.py": b"", "wheelfarm_demo/b.py": b""})
    )
    assert problems == [
        (
            "more than 3 members (at 'wheelfarm_demo/__init__.py'); a real package holds far fewer: "
            "not read further"
        )
    ]


@pytest.mark.parametrize("cut", [lambda data: b"not a zip", lambda data: data[:-30]])
def test_verify_a_non_zip_or_cut_wheel_is_one_problem(
    cut: Callable[[bytes], bytes], tmp_path: Path
) -> None:
    wheel = _wheel(tmp_path)
    wheel.write_bytes(cut(wheel.read_bytes()))
    assert verify_static(wheel, _want()).problems == [f"cannot read {NAME}: File is not a zip file"]


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({f"{INFO}/METADATA": None}, "KeyError"),
        ({f"{INFO}/METADATA": b"\xff"}, "UnicodeDecodeError"),
    ],
    ids=["no METADATA", "not UTF-8"],
)
def test_relabel_a_broken_wheel_is_a_build_error(
    extra: dict[str, bytes | None], reason: str, tmp_path: Path
) -> None:
    built = _wheel(tmp_path, **extra)
    unlabelled = built.with_name(NAME.replace("+cu130torch2.14", ""))
    built.rename(unlabelled)
    with pytest.raises(BuildError, match=rf"not a wheel relabel can read \({reason}"):
        relabel(unlabelled, "cu130torch2.14", tmp_path / "out")


# --- the wheelhouse ----------------------------------------------------------------------------


def test_wheelhouse_non_zip_wheel_names_the_file(tmp_path: Path) -> None:
    (tmp_path / NAME).write_bytes(b"not a zip")
    with pytest.raises(SiteError) as info:
        wheelhouse_catalog(tmp_path, None, {})
    assert str(info.value) == (
        f"{tmp_path / NAME}: not a readable farm wheel (File is not a zip file); "
        f"rebuild it or remove it"
    )


def _flip_metadata(data: bytes) -> bytes:
    """The wheel with the compressed bytes after METADATA's local header flipped."""
    out = bytearray(data)
    start = out.index(b"METADATA") + len("METADATA")
    out[start : start + 32] = bytes(b ^ 0x55 for b in out[start : start + 32])
    return bytes(out)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [(lambda data: data[:-30], "File is not a zip file"),
     (_flip_metadata, "Error -3 while decompressing data")],
    ids=["cut", "flipped"],
)  # fmt: skip
def test_wheelhouse_corrupt_zip_names_the_file(
    damage: Callable[[bytes], bytes], reason: str, tmp_path: Path
) -> None:
    wheel = _wheel(tmp_path)
    wheel.write_bytes(damage(wheel.read_bytes()))
    with pytest.raises(SiteError, match=rf"\.whl: not a readable farm wheel \({reason}"):
        wheelhouse_catalog(tmp_path, None, {})


def test_wheelhouse_metadata_bomb_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("wheelfarm.core.wheelfile.MAX_METADATA", 16)
    _wheel(tmp_path)
    with pytest.raises(SiteError, match=r"METADATA unpacks to \d+ bytes, over the 16 allowed"):
        wheelhouse_catalog(tmp_path, None, {})


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("{garbled", "the record: not valid JSON (Expecting property name"),
        ("[1, 2]", "the record: not a build record (a JSON object), got a list"),
        ('{"version": 2, "target": {"covers": [{"cuda": "cu130"}]}}', "the record: build_id is missing"),
    ],
    ids=["not JSON", "a list", "covers"],
)  # fmt: skip
def test_wheelhouse_garbled_build_record_names_it(
    record: str,
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    house = tmp_path / "house"
    wheel = _wheel(house)
    wheel.with_name(wheel.name + ".build.json").write_text(record)
    monkeypatch.chdir(REPO.path)
    assert (
        main(["index", "--wheelhouse", str(house), "--out", str(tmp_path / "site")])
        == SiteError.exit_code
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{wheel}.build.json: {message}" in err
    assert not (tmp_path / "site").exists()


# --- the install helper ------------------------------------------------------------------------


def _helper() -> ModuleType:
    spec = importlib.util.spec_from_file_location("wheelfarm_install", REPO.install_helper)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"<html>not json</html>", "is not a wheelfarm packages.json (JSONDecodeError: Expecting value"),
        (b'{"wheels": [{"name": "demo"}]}', "is not a wheelfarm packages.json (KeyError: 'version')"),
        (b'{"wheels": [{"name": 1}]}', "is not a wheelfarm packages.json (TypeError: {'name': 1})"),
        (b'{"wheels": "none"}', "is not a wheelfarm packages.json (TypeError"),
        (b"\xff\xfe\xfa", "is not a wheelfarm packages.json (UnicodeDecodeError"),
    ],
    ids=["html", "missing key", "not a string", "wrong type", "bad utf-8"],
)  # fmt: skip
def test_install_helper_garbled_index_is_one_line_exit_3(
    body: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "packages.json").write_bytes(body)
    helper = _helper()
    code = helper.main(["demo", "--index", tmp_path.as_uri(), "--dry-run"])
    err = capsys.readouterr().err
    assert code == helper.UNREADABLE_INDEX == 3
    assert err.count("\n") == 1
    assert err.startswith(f"install.py: error: {tmp_path.as_uri()}/packages.json {message}")


def test_install_helper_unreadable_index_is_one_line_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    helper = _helper()
    code = helper.main(["demo", "--index", (tmp_path / "nowhere").as_uri()])
    err = capsys.readouterr().err
    assert code == 3
    assert err.count("\n") == 1
    assert "cannot read file://" in err
    assert "check --index (the farm's site root)" in err


def test_install_helper_reads_a_good_index(tmp_path: Path) -> None:
    wheel = {"name": "demo", "version": "1.0+cu130torch2.14", "public_version": "1.0",
             "filename": NAME, "url": f"https://example.org/{NAME}", "sha256": "0" * 64,
             "covers": [{"cuda": "cu130", "torch": "2.14", "python": "3.12",
                         "platform": "linux_x86_64"}]}  # fmt: skip
    (tmp_path / "packages.json").write_text(json.dumps({"wheels": [wheel]}))
    assert _helper().read_index(tmp_path.as_uri() + "/") == [wheel]
