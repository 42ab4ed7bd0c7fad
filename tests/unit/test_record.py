"""The build record: one layout (wheelfarm.core.record), the schema beside the YAML schemas
describing the same, records the builder wrote before still reading, and hostile records
failing as one line."""

from __future__ import annotations

import dataclasses
import json
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ghsim.synthetic import SAMPLE, sample_record
from tests.roots import REPO
from tests.runner import Recorder
from tests.unit.helpers.wheels import REQUIRED, _distinct, _house, _options
from wheelfarm import farm
from wheelfarm.builder.build import BuildOptions
from wheelfarm.builder.importcheck import install_farm_wheel
from wheelfarm.core import record
from wheelfarm.core.errors import VerifyError
from wheelfarm.core.record import BuildRecord, RecordError, path_for
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

ROOT = Path(__file__).parents[2]
SCHEMA = json.loads((ROOT / "matrix" / "schema" / "build-record.schema.json").read_text())
VALIDATOR = Draft202012Validator(SCHEMA)

# A record exactly as the builder wrote it before the layout had a module (version 2).
WRITTEN_V2: dict[str, Any] = {
    "version": 2,
    "build_id": "demo-pkg-1.0.0-cu130torch2.14-cp312-linux_x86_64",
    "wheelfarm": "0.1.0",
    "target": {
        "package": "demo-pkg", "version": "1.0.0", "abi": "cpython", "cuda": "cu130",
        "torch": "2.14.0", "python": "3.12", "platform": "linux_x86_64",
        "label": "cu130torch2.14", "archs": "9.0",
        "covers": [{"package": "demo-pkg", "version": "1.0.0", "torch": "2.14", "cuda": "cu130",
                    "python": "3.12", "platform": "linux_x86_64"}],
    },
    "source": {"sdist": None, "git": None, "path": "demo/wheelfarm-demo", "subdir": None,
               "digest": "path:demo/wheelfarm-demo", "patches": []},
    "toolchain": {"cuda": "13.0.88", "cuda_home": "/usr/local/cuda", "compiler": "gcc 13"},
    "torch": {"torch": "2.14.0+cu130", "cuda": "13.0"},
    "options": {"torch_index": "https://download.pytorch.org/whl/cu130",
                "sdist_index": "https://pypi.org/simple", "plat": "manylinux_2_28_x86_64"},
    "environment": {"MAX_JOBS": "2", "CCACHE_BASEDIR": "<work>"},
    "archs_found": {"demo_pkg/_C.so": {"cubins": ["sm_90"], "ptx": []}},
    "wheel": {"filename": "demo_pkg-1.0.0+cu130torch2.14-cp312-cp312-linux_x86_64.whl",
              "sha256": "ab" * 32, "size": 1},
    "timing": {"created": "2026-01-01T00:00:00+00:00", "steps_seconds": {"compile": 81.5},
               "ccache": {"hits": 0}},
}  # fmt: skip


def _v1() -> dict[str, Any]:
    """The same build as version 1 wrote it: no options, no subdir, timing at the top."""
    old = json.loads(json.dumps(WRITTEN_V2))
    del old["options"], old["source"]["subdir"]
    old |= old.pop("timing") | {"version": 1}
    return old


def test_a_record_the_builder_wrote_reads_and_writes_back_the_same() -> None:
    read = BuildRecord.from_json(json.dumps(WRITTEN_V2, indent=2), what="r")
    assert read == SAMPLE
    assert read.to_object() == WRITTEN_V2
    assert json.loads(read.to_json()) == WRITTEN_V2
    assert BuildRecord.from_json(read.to_json(), what="r") == read


def test_a_version_1_record_reads_as_version_2_without_options() -> None:
    read = BuildRecord.from_object(_v1(), what="r")
    assert read == dataclasses.replace(SAMPLE, options=None)
    assert BuildRecord.from_json(read.to_json(), what="r") == read
    assert VALIDATOR.is_valid(read.to_object())


def test_the_published_record_has_no_timing_and_reads_back() -> None:
    published = SAMPLE.published().to_object()
    assert "timing" not in published
    assert BuildRecord.from_object(published, what="r") == SAMPLE.published()
    assert VALIDATOR.is_valid(published)


KERNELS = record.KernelCheck(
    passed=False, gpu="NVIDIA H100 80GB HBM3", sm="sm_90", driver="580.65.06",
    checked="2026-12-07T10:00:00+00:00", runner="gpu-h100", reference="sdpa", largest=0.5,
    largest_op="flash_attn_func", failure="flash_attn_func: max abs 0.5 (bound 0.002)",
    ops=(record.KernelOp(name="flash_attn_func", metric="max abs", value=0.5, bound=2e-3,
                         passed=False, note=None),),
)  # fmt: skip


def test_a_kernel_check_is_kept_in_the_record_and_in_what_publish_uploads() -> None:
    checked = dataclasses.replace(SAMPLE, kernels=KERNELS)
    data = checked.published().to_object()
    assert data["kernels"]["gpu"] == "NVIDIA H100 80GB HBM3"
    assert data["kernels"]["ops"][0]["bound"] == 2e-3
    assert VALIDATOR.is_valid(data)
    assert BuildRecord.from_object(data, what="r") == checked.published()
    # a record whose kernels never ran on a GPU has no key, and reads back as before
    assert "kernels" not in SAMPLE.to_object()
    assert BuildRecord.from_object(WRITTEN_V2, what="r").kernels is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda k: k.update(passed="yes"), "r: kernels.passed should be a boolean, not a string"),
        (lambda k: k.pop("gpu"), "r: kernels.gpu is missing"),
        (lambda k: k["ops"][0].update(value=[1]), "r: kernels.ops[0].value should be a number"),
    ],
)
def test_a_hostile_kernel_check_fails_as_one_line(change: Any, message: str) -> None:
    data = json.loads(dataclasses.replace(SAMPLE, kernels=KERNELS).to_json())
    change(data["kernels"])
    with pytest.raises(RecordError) as caught:
        BuildRecord.from_object(data, what="r")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_the_schema_describes_the_dataclasses() -> None:
    """Every dataclass field is a schema property, required unless it has a default, and no
    property is missing from the dataclasses: the two spell one layout."""
    Draft202012Validator.check_schema(SCHEMA)
    assert VALIDATOR.is_valid(WRITTEN_V2)

    def check(cls: type, node: dict[str, Any], at: str) -> None:
        node = _resolved(node)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        assert set(node["properties"]) == set(fields), at
        required = {n for n, f in fields.items() if f.default is dataclasses.MISSING}
        assert set(node["required"]) == required, at
        assert node["additionalProperties"] is False, at
        hints = typing.get_type_hints(cls)
        for name in fields:
            for inner, sub in _nested(hints[name], node["properties"][name]):
                check(inner, sub, f"{at}.{name}")

    check(BuildRecord, SCHEMA, "record")


def _resolved(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    return typing.cast("dict[str, Any]", SCHEMA["$defs"][ref.rsplit("/", 1)[1]]) if ref else node


def _nested(hint: Any, node: dict[str, Any]) -> list[tuple[type, dict[str, Any]]]:
    """The dataclasses inside a field's type, each with the schema node that describes it."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if dataclasses.is_dataclass(hint):
        return [(typing.cast("type", hint), node)]
    if typing.get_origin(hint) is tuple:
        return _nested(args[0], node["items"])
    if typing.get_origin(hint) is Mapping:
        return _nested(args[1], node["additionalProperties"])
    if len(args) == 1:  # X | None: the schema's object branch
        (branch,) = [b for b in node.get("oneOf", [node]) if b.get("type") != "null"]
        return _nested(args[0], branch)
    return []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("wheel"), "r: wheel is missing"),
        (lambda r: r["wheel"].pop("sha256"), "r: wheel.sha256 is missing"),
        (lambda r: r["wheel"].update(size="1"), "r: wheel.size should be an integer, not a string"),
        (lambda r: r["wheel"].update(size=True), "r: wheel.size should be an integer, not a boolean"),
        (lambda r: r["target"]["covers"].append({}), "r: target.covers[1].package is missing"),
        (lambda r: r["target"].update(covers={}), "r: target.covers should be a list, not an object"),
        (lambda r: r["archs_found"].update({"x\n.so": []}), "r: archs_found['x\\n.so'] should be an object, not a list"),
        (lambda r: r["environment"].update(PATH=None), "r: environment['PATH'] should be a string, not null"),
        (lambda r: r.update(extra=1), "r: the record has an unknown key 'extra'"),
        (lambda r: r["source"].update({"\u202e": 1}), "r: source has an unknown key '\\u202e'"),
        (lambda r: r.update(version=3), "r: build record version 3; this wheelfarm reads versions 1 to 2"),
        (lambda r: r.update(version="2"), "r: build record version '2'"),
        (lambda r: r.pop("version"), "r: build record version None"),
    ],
)  # fmt: skip
def test_a_malformed_record_is_one_line_naming_the_field(change: Any, message: str) -> None:
    data = json.loads(json.dumps(WRITTEN_V2))
    change(data)
    with pytest.raises(RecordError) as caught:
        BuildRecord.from_json(json.dumps(data), what="r")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{garbled", "r: not valid JSON"),
        (b"[1, 2]", "r: not a build record (a JSON object), got a list"),
        (b"[" * 100_000, "r: JSON nested 100000 deep"),
        (b'"' + b"x" * (record.MAX_BYTES + 1) + b'"', "r: 16,777,219 bytes of JSON"),
        (b"\xff\xfe", "r: not valid JSON"),
    ],
    ids=["garbled", "list", "deep", "huge", "not UTF-8"],
)
def test_a_file_that_is_no_record_is_one_line(raw: bytes, message: str) -> None:
    with pytest.raises(RecordError) as caught:
        BuildRecord.from_json(raw, what="r")
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)


def test_read_names_the_path_and_an_unreadable_one(tmp_path: Path) -> None:
    wheel = tmp_path / "w.whl"
    assert record.path_for(wheel) == tmp_path / "w.whl.build.json"
    assert record.is_record_name("w.whl.build.json")
    assert not record.is_record_name("x.shard-1of2.json")
    record.path_for(wheel).write_text(SAMPLE.to_json())
    assert BuildRecord.read(record.path_for(wheel)) == SAMPLE
    with pytest.raises(RecordError, match=r"^.*missing\.build\.json: cannot be read \(No such"):
        BuildRecord.read(tmp_path / "missing.build.json")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)


def _paths(value: object, at: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every place in a JSON value a hostile value can be put."""
    found: list[tuple[object, ...]] = [at]
    if isinstance(value, dict):
        found += [p for k, v in value.items() for p in _paths(v, (*at, k))]
    elif isinstance(value, list):
        found += [p for i, v in enumerate(value) for p in _paths(v, (*at, i))]
    return found


def _outcome(parse: Any, value: object) -> BuildRecord | RecordError:
    try:
        return typing.cast("BuildRecord", parse(value, what="r"))
    except RecordError as exc:
        return exc


@given(data=st.data(), value=JSON)
@settings(max_examples=300, deadline=None)
def test_any_change_to_a_record_reads_as_the_schema_allows_or_is_one_line(
    data: st.DataObject, value: object
) -> None:
    """Put any JSON anywhere in a written record (or drop a key): what from_json accepts,
    the schema accepts too; the rest is refused as one RecordError line."""
    doc = json.loads(json.dumps(WRITTEN_V2))
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if isinstance(parent, dict) and data.draw(st.booleans()):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    read = _outcome(BuildRecord.from_json, json.dumps(doc))
    if isinstance(read, RecordError):
        assert "\n" not in str(read)
        assert str(read).startswith("r: ")
    else:
        assert VALIDATOR.is_valid(read.to_object())


@given(JSON)
@settings(max_examples=200, deadline=None)
def test_any_json_is_a_record_or_one_line(value: object) -> None:
    read = _outcome(BuildRecord.from_object, value)
    assert not isinstance(read, RecordError) or "\n" not in str(read)


@given(st.binary(max_size=64))
@settings(max_examples=200, deadline=None)
def test_any_bytes_are_a_record_or_one_line(raw: bytes) -> None:
    with pytest.raises(RecordError) as caught:
        BuildRecord.from_json(raw, what="r")
    assert "\n" not in str(caught.value)


def test_sample_record_is_the_written_one() -> None:
    assert sample_record(build_id="x").build_id == "x"
    assert sample_record().to_object() == WRITTEN_V2


def test_every_recorded_option_is_a_build_option_of_a_type_that_takes_it() -> None:
    options = typing.get_type_hints(BuildOptions)
    for name, hint in typing.get_type_hints(record.RecordedOptions).items():
        assert name in options, f"RecordedOptions.{name} is no BuildOptions field"
        assert hint is options[name] or hint in typing.get_args(options[name]), name


def test_what_a_build_records_a_rebuild_builds_with(tmp_path: Path) -> None:
    recorded = record.RecordedOptions(**_distinct(record.RecordedOptions))
    again = _options(tmp_path, python="3.12").replaying(recorded)
    assert again.recorded() == recorded
    assert (again.out_dir, again.python) == (tmp_path / "out", "3.12")  # the rest kept
    fresh = _options(tmp_path)
    assert fresh.replaying(None) == fresh  # a version 1 record kept none: the defaults


def test_rebuild_and_compare_builds_with_the_records_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    matrix = load_matrix(REPO)
    expansion = expand(matrix)
    build = next(b for b in expansion.builds if b.package == "wheelfarm-demo")
    recorded = record.RecordedOptions(**_distinct(record.RecordedOptions))
    wheel = tmp_path / "w.whl"
    wheel.write_bytes(b"wheel")
    facts = sample_record(build_id=build.id, options=recorded)
    facts = dataclasses.replace(facts, wheel=dataclasses.replace(facts.wheel, filename=wheel.name))
    record.path_for(wheel).write_text(facts.to_json())
    seen: list[BuildOptions] = []

    class StopBuildError(Exception):
        pass

    def run_build(target: object, opts: BuildOptions) -> typing.NoReturn:
        seen.append(opts)
        raise StopBuildError

    monkeypatch.setattr(farm, "run_build", run_build)
    with pytest.raises(StopBuildError):
        farm.rebuild_and_compare(
            matrix, expansion, wheel, record.path_for(wheel), cache=tmp_path, python="3.12"
        )
    (opts,) = seen
    assert opts.recorded() == recorded
    assert (opts.cache, opts.python) == (tmp_path, "3.12")


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"wheel": None}, "no build record of it"),
        (
            {"build_id": "other-1.0.0-cu130torch2.14-cp312-linux_x86_64"},
            "its build record is of 'other-1.0.0-",
        ),
        ({"stale": True}, "its bytes are not the ones its build record hashed (a stale"),
    ],
)
def test_a_wheelhouse_wheel_its_record_does_not_vouch_for_is_not_installed(
    tmp_path: Path, changes: dict[str, Any], problem: str
) -> None:
    """Issue 36: build code writes --out; a wheel with the pinned name and no record (a `.pth`
    in it runs code in the build venv), another build's record, or a stale wheel is refused
    and pip never runs."""
    run = Recorder()
    wheel = _house(tmp_path / "house")
    if changes.pop("stale", False):
        wheel.write_bytes(b"an earlier build")
    if changes.pop("wheel", 1) is None:
        path_for(wheel).unlink()
    if changes:
        path_for(wheel).write_text(sample_record(**changes).to_json())
    with pytest.raises(VerifyError) as info:
        install_farm_wheel(
            tmp_path / "py", REQUIRED, wheel.parent, log=tmp_path / "l", for_wheel="u.whl", run=run
        )
    _, line = str(info.value).splitlines()
    assert f"{REQUIRED.pin} (farm_requires): {wheel}: {problem}" in line
    assert "nothing was installed" in line
    assert run.commands == []


def test_a_record_says_which_compile_and_torch_a_minors_wheel_came_from() -> None:
    """ADR 19: the cu132 wheel of the cu130 compile names the compile and the torch it was
    verified beside; it reads back, and the schema takes it."""
    compiled = record.CompiledFacts(
        id="demo-pkg-1.0.0-cu13torch2.15-cp312-linux_x86_64",
        cuda="cu130",
        variants=("cu130", "cu132"),
        verified_with=record.TorchFacts(torch="2.15.0+cu132", cuda="13.2"),
    )
    written = sample_record(compiled=compiled).to_object()
    assert written["compiled"]["verified_with"] == {"torch": "2.15.0+cu132", "cuda": "13.2"}
    assert VALIDATOR.is_valid(written)
    assert BuildRecord.from_object(written, what="r").compiled == compiled
    assert "compiled" not in SAMPLE.to_object()  # a record from before ADR 19 writes back as read
