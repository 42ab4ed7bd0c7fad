"""Load and validate the maintainers' YAML. Every problem in every file is collected and reported
at once as `file:line: key: message`, with "did you mean" for typos."""

from __future__ import annotations

import difflib
import json
import math
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, cast

import yaml
from jsonschema import Draft202012Validator, ValidationError
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from referencing import Registry, Resource

from wheelfarm.core.errors import ConfigError, UsageError
from wheelfarm.core.label import cuda_version
from wheelfarm.core.platforms import NAMES
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.model import (
    ENV_PLACEHOLDER,
    Abi,
    ArchList,
    ArchPolicy,
    ArchRule,
    Exclusion,
    FarmConfig,
    Matrix,
    Package,
    PackageVersion,
    PlatformInfo,
    PythonAbi,
    Source,
    SplitCompile,
    TorchRelease,
)

# Input bounds. The shipped files are a few KB and nest six levels deep; anything far past that
# is a mistake or an attack, and PyYAML composes recursively, so depth is bounded before it is.
MAX_FILE_BYTES = 1 << 20
MAX_DEPTH = 32
MAX_PROBLEMS = 200  # past this the maintainer fixes the first ones and runs validate again
MAX_LINE = 400  # one problem line; a value is shown clipped
MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")

_STR = "tag:yaml.org,2002:str"


@dataclass
class _Collector:
    """Gathers problems across files so the maintainer fixes them all in one pass: each one
    line, and no more than MAX_PROBLEMS of them."""

    problems: list[str] = field(default_factory=list)
    dropped: int = 0

    def add(self, file: Path, line: int, key: str, message: str) -> None:
        where = f"{file}:{line}" if line else str(file)
        text = f"{where}: {key}: {message}" if key else f"{where}: {message}"
        text = " ".join(text.splitlines())
        if len(self.problems) >= MAX_PROBLEMS:
            self.dropped += 1
        else:
            self.problems.append(_short(text))

    @property
    def total(self) -> int:
        """Every problem found, shown or not."""
        return len(self.problems) + self.dropped

    def report(self) -> list[str]:
        more = [f"... and {self.dropped} more problems: fix these first"] if self.dropped else []
        return self.problems + more


class _Refused(yaml.MarkedYAMLError):
    """Valid YAML the farm refuses: an alias, a duplicate or non-string key, deep nesting."""

    def __init__(self, problem: str, mark: yaml.Mark | None) -> None:
        super().__init__(problem=problem, problem_mark=mark)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader minus what the farm's YAML never needs and an attacker or a slip uses:
    aliases (13 lines can expand to gigabytes), duplicate keys (the second silently wins),
    keys that are not strings (`12.8:` is a float) and nesting past MAX_DEPTH."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:  # noqa: ANN401 - PyYAML's own signature
        event = self.peek_event()  # type: ignore[no-untyped-call]  # PyYAML's stubs leave it untyped
        if isinstance(event, yaml.AliasEvent):
            msg = (
                f"alias *{event.anchor} refused: write the value out "
                f"(aliases can expand a few lines into gigabytes)"
            )
            raise _Refused(msg, cast("yaml.Mark", event.start_mark))
        if self._depth >= MAX_DEPTH:
            msg = f"nested deeper than {MAX_DEPTH} levels; the farm's files need a handful"
            raise _Refused(msg, cast("yaml.Mark", event.start_mark))
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:  # noqa: ANN401, FBT001, FBT002 - PyYAML's own signature
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:  # e.g. `2024-13-01` read as a date
            kind = node.tag.rsplit(":", 1)[-1]
            msg = f"{_clip(node.value)} cannot be read as a {kind} ({exc}); quote it"
            raise _Refused(msg, node.start_mark) from exc

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:  # noqa: FBT001, FBT002 - PyYAML's own signature
        first: dict[str, int] = {}
        for key, _ in node.value:
            if not (isinstance(key, yaml.ScalarNode) and key.tag == _STR):
                msg = f'key {_clip(key.value)} is not a string: quote it (e.g. "12.8":)'
                raise _Refused(msg, key.start_mark)
            if key.value in first:
                msg = (
                    f"duplicate key {key.value!r} (first on line {first[key.value]}); the second "
                    f"would silently replace the first: keep one"
                )
                raise _Refused(msg, key.start_mark)
            first[key.value] = key.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


def parse_yaml(text: str) -> tuple[Any, yaml.Node | None]:
    """The value and node tree of one YAML document, read with the farm's strict rules (see
    _StrictLoader); raises yaml.YAMLError. Other readers of the farm's YAML should use it too."""
    loader = _StrictLoader(text)
    try:
        tree = loader.get_single_node()
        return (loader.construct_document(tree) if tree is not None else None), tree
    finally:
        loader.dispose()


def _short(text: str, limit: int = MAX_LINE) -> str:
    """`text` cut to `limit` characters: a message repeats a value, never a megabyte of it.

    >>> _short("x" * 10, 8), _clip("x" * 100, 10)
    ('xxxxx...', "'xxxxxx...")
    """
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _clip(value: object, limit: int = 80) -> str:
    """Repr of a value from the input, cut short."""
    return _short(repr(value), limit)


@cache
def _validator(schemas: Path, name: str) -> Draft202012Validator:
    """The validator for one file kind, from the farm root's own schemas (cached per folder)."""
    resources = []
    for path in schemas.glob("*.schema.json"):
        schema = json.loads(path.read_text(encoding="utf-8"))
        resources.append((schema["$id"], Resource.from_contents(schema)))
    registry: Registry[Any] = Registry().with_resources(resources)
    schema = json.loads((schemas / f"{name}.schema.json").read_text(encoding="utf-8"))
    return Draft202012Validator(schema, registry=registry)


def _line(node: yaml.Node | None, path: list[str | int]) -> tuple[int, yaml.Node | None]:
    """1-based line of the value at `path` in a composed YAML tree (the deepest node found)."""
    current = node
    for step in path:
        if isinstance(current, yaml.MappingNode):
            match = next((v for k, v in current.value if k.value == step), None)
        elif isinstance(current, yaml.SequenceNode) and isinstance(step, int):
            match = current.value[step] if step < len(current.value) else None
        else:
            match = None
        if match is None:
            break
        current = match
    return (current.start_mark.line + 1 if current is not None else 0), current


def _key_line(node: yaml.Node | None, key: str) -> int:
    if isinstance(node, yaml.MappingNode):
        for k, _ in node.value:
            if k.value == key:
                return int(k.start_mark.line) + 1
    return node.start_mark.line + 1 if node is not None else 0


def _dotted(path: list[str | int]) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out or "(top level)"


def _schema_problems(
    error: ValidationError, tree: yaml.Node | None
) -> Iterator[tuple[int, str, str]]:
    """Turn one jsonschema error into (line, key, message) with the allowed values and a hint."""
    path = list(error.absolute_path)
    line, node = _line(tree, path)
    key = _dotted(path)
    if error.validator == "additionalProperties":
        allowed = sorted(cast("dict[str, Any]", error.schema).get("properties", {}))
        for extra in sorted(set(cast("dict[str, Any]", error.instance)) - set(allowed)):
            hint = difflib.get_close_matches(extra, allowed, n=1)
            tip = f"; did you mean {hint[0]!r}?" if hint else ""
            yield (
                _key_line(node, extra),
                _dotted([*path, extra]),
                f"unknown key {extra!r} (allowed: {', '.join(allowed)}){tip}",
            )
    elif error.validator == "enum":
        allowed = [str(v) for v in cast("list[Any]", error.validator_value)]
        hint = difflib.get_close_matches(str(error.instance), allowed, n=1)
        tip = f"; did you mean {hint[0]!r}?" if hint else ""
        yield (
            line,
            key,
            f"{_clip(error.instance)} is not allowed (allowed: {', '.join(allowed)}){tip}",
        )
    elif error.validator == "oneOf" and path and path[-1] == "source":
        chosen = _chosen_form(error)
        if chosen:
            for sub in chosen:
                yield from _schema_problems(sub, tree)
            return
        forms = cast("list[dict[str, Any]]", error.validator_value)
        known = sorted({k for form in forms for k in form.get("properties", {})})
        instance = error.instance if isinstance(error.instance, dict) else {}
        hints = [
            f"{k!r} -> did you mean {m[0]!r}?"
            for k in sorted(set(instance) - set(known))
            if (m := difflib.get_close_matches(k, known, n=1))
        ]
        yield (
            line,
            key,
            f"{_clip(error.instance)} is not a source: use {{sdist: NAME, sha256: HEX}}, "
            "{git: URL, commit: SHA40} or {path: FOLDER}"
            + (f" ({'; '.join(hints)})" if hints else ""),
        )
    elif error.validator == "required":
        missing = str(error.message).split("'")[1]
        yield (
            _line(tree, path)[0],
            _dotted([*path, missing]),
            "missing: this key is required (see matrix/schema/package.schema.json)",
        )
    elif error.validator == "pattern":
        why = cast("dict[str, Any]", error.schema).get("description")  # the rule in words
        rule = why or f"the pattern {error.validator_value}"
        yield line, key, f"{_clip(error.instance)} does not match {rule}"
    else:
        yield line, key, _short(error.message)


def _chosen_form(error: ValidationError) -> list[ValidationError]:
    """For a source that fits no form: the errors of the form whose required keys it has, so a
    git source with a bad URL hears about the URL, not about every form there is."""
    forms = cast("list[dict[str, Any]]", error.validator_value)
    have = set(error.instance) if isinstance(error.instance, dict) else set()
    for i, form in enumerate(forms):
        if set(form.get("required", ())) <= have:
            return [e for e in error.context or () if e.relative_schema_path[0] == i]
    return []


def _read(
    path: Path, schemas: Path, schema: str, errors: _Collector
) -> tuple[Any, yaml.Node | None]:
    """Parse one file; schema errors are collected, a YAML syntax error stops that file only."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            errors.add(path, 0, "", f"larger than {MAX_FILE_BYTES} bytes; split it or trim it")
            return None, None
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        errors.add(path, 0, "", f"not UTF-8 ({exc.reason} at byte {exc.start}): save it as UTF-8")
        return None, None
    except OSError as exc:
        errors.add(path, 0, "", f"cannot read it: {exc.strerror or exc}")
        return None, None
    try:
        data, tree = parse_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        label = "" if isinstance(exc, _Refused) else "YAML syntax error: "
        label += f"{context}: " if context else ""
        errors.add(path, mark.line + 1 if mark else 0, "", f"{label}{problem}")
        return None, None
    before = errors.total
    for error in sorted(
        _validator(schemas, schema).iter_errors(data), key=lambda e: list(map(str, e.path))
    ):
        for line, key, message in _schema_problems(error, tree):
            errors.add(path, line, key, message)
    return (data if errors.total == before else None), tree


@dataclass
class _File:
    """One YAML file being checked: reports problems at the line of a path in its tree."""

    path: Path
    tree: yaml.Node | None
    errors: _Collector

    def add(self, where: list[str | int], message: str) -> None:
        self.errors.add(self.path, _line(self.tree, where)[0], _dotted(where), message)

    def spec(self, value: str | None, where: list[str | int]) -> SpecifierSet:
        try:
            return SpecifierSet(value or "")
        except InvalidSpecifier:
            self.add(where, f"{value!r} is not a PEP 440 specifier (e.g. '>=2.6')")
            return SpecifierSet()


def _abi(f: _File, data: dict[str, Any], where: list[str | int]) -> Abi:
    """An `abi` mapping, top-level or a version's own, checked across its fields."""
    kind, given = data["kind"], data.get("python")
    if kind == "torch-stable" and "min_torch" not in data:
        f.add(
            [*where, "min_torch"],
            "required for kind 'torch-stable' (the TORCH_TARGET_VERSION, e.g. '2.10')",
        )
    if kind == "abi3" and given not in (None, "abi3"):
        f.add(
            [*where, "python"],
            f"{given!r} contradicts kind 'abi3' (a limited-API build): drop python, or use "
            f"kind 'cpython' with python: {given}",
        )
    python: PythonAbi = "abi3" if kind == "abi3" else given or "cpython"
    if "python_floor" in data and python == "cpython":
        f.add(
            [*where, "python_floor"],
            "only an abi3 or 'none' wheel has a floor in its tag: set python: abi3 or none, "
            "or drop python_floor",
        )
    return Abi(
        kind=kind,
        min_torch=data.get("min_torch"),
        python=python,
        python_floor=data.get("python_floor"),
    )


def _versions(f: _File, items: list[dict[str, Any]], root: FarmRoot) -> list[PackageVersion]:
    out: list[PackageVersion] = []
    seen: dict[Version, int] = {}
    for i, item in enumerate(items):
        try:
            version = Version(item["version"])
        except InvalidVersion:
            f.add(["versions", i, "version"], f"{_clip(item['version'])} is not a PEP 440 version")
            continue
        if version.local:
            f.add(
                ["versions", i, "version"],
                f"{item['version']!r} has a local label; the farm adds its own",
            )
        if version in seen:
            f.add(
                ["versions", i, "version"],
                f"{item['version']!r} is versions[{seen[version]}] again (PEP 440 equal); "
                f"list each version once, with one source",
            )
        seen.setdefault(version, i)
        for j, patch in enumerate(item.get("patches", [])):
            if Path(patch).name != patch or not (root.patches / patch).is_file():
                f.add(
                    ["versions", i, "patches", j],
                    f"{_clip(patch)} is not a file name in {root.patches}: put the patch there "
                    f"and name it without a folder",
                )
        source = Source(**item["source"])
        if source.path is not None:
            try:
                root.inside(source.path, "source path")
            except (UsageError, ValueError) as exc:  # ValueError: a NUL in the path
                f.add(
                    ["versions", i, "source", "path"],
                    f"{_clip(source.path)} cannot be a source folder ({exc}): give a folder "
                    f"inside the farm root, relative to it (e.g. demo/NAME)",
                )
        out.append(
            PackageVersion(
                version=version,
                source=source,
                patches=tuple(item.get("patches", [])),
                yanked=item.get("yanked"),
                abi=_abi(f, item["abi"], ["versions", i, "abi"]) if "abi" in item else None,
                build_minutes_per_arch=item.get("build_minutes_per_arch"),
            )
        )
    return out


def _arch_rules(
    f: _File, rules: list[dict[str, Any]], cuda_spec: SpecifierSet, policy: ArchPolicy | None
) -> list[ArchRule]:
    """Overrides, each checked against what every CUDA the package builds for can compile."""
    out = []
    for i, rule in enumerate(rules):
        spec = f.spec(rule.get("cuda"), ["arch", "override", i, "cuda"])
        archs = ArchList.parse(rule["archs"])
        for cuda, (lo, hi) in (policy.supported if policy else {}).items():
            bad = [a.dotted for a in archs.archs if not lo <= a.sm <= hi]
            if bad and Version(cuda) in cuda_spec and Version(cuda) in spec:
                f.add(
                    ["arch", "override", i, "archs"],
                    f"{', '.join(bad)} not compiled by CUDA {cuda} (supports sm_{lo}..sm_{hi}); "
                    f"add a 'cuda' bound to this rule",
                )
        out.append(
            ArchRule(
                archs=archs, cuda=spec if rule.get("cuda") else None, platform=rule.get("platform")
            )
        )
    return out


def requirement_problem(text: str) -> str | None:
    """Why `text` is not a plain PEP 508 requirement that pip resolves from an index, or None
    when it is one. An option (`--index-url=...`), an editable (`-e git+...`) or a URL would let
    a package file choose where code comes from, around the source policy."""
    if text.lstrip().startswith("-"):
        return "an option or an editable, not a requirement"
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        return f"not a PEP 508 requirement ({_short(str(exc), 120)})"
    if requirement.url:
        return "a URL requirement; a git or URL dependency goes through the source policy"
    return None


def module_problem(name: str) -> str | None:
    """Why `name` is not a dotted module name the import check can import by name, or None."""
    if MODULE_NAME.fullmatch(name):
        return None
    return "not a dotted module name"


def _farm_requires_checks(f: _File, name: str, required: list[str], known: frozenset[str]) -> None:
    for i, req in enumerate(required):
        if canonicalize_name(req) == name:
            f.add(["farm_requires", i], f"{req!r} is this package itself: drop it")
        elif canonicalize_name(req) not in known:
            f.add(
                ["farm_requires", i],
                f"{req!r} is no package of this farm (packages/*.yaml): add its file, or list "
                f"it in import_requires if PyPI has a wheel",
            )


def _data_checks(f: _File, data: dict[str, Any]) -> None:
    """Values that reach pip's argv and the import check: data in their plain shapes only."""
    for key in ("build_requires", "import_requires"):
        for i, req in enumerate(data.get(key, [])):
            if problem := requirement_problem(req):
                f.add(
                    [key, i],
                    f"{_clip(req)} is {problem}: give a name with an optional version, e.g. "
                    f"'numpy>=1.26'",
                )
    for i, module in enumerate(data["import"]):
        if problem := module_problem(module):
            f.add(
                ["import", i],
                f"{_clip(module)} is {problem}: give the module to import, e.g. 'flash_attn' "
                f"or 'torch_scatter.scatter'",
            )


def _cross_field_checks(
    f: _File, data: dict[str, Any], versions: list[PackageVersion], known: frozenset[str]
) -> None:
    name = canonicalize_name(data["name"])
    if f.path.stem != name:
        f.add(["name"], f"{data['name']!r} must match the file name: rename it to {name}.yaml")
    numbers: list[tuple[list[str | int], Any]] = [
        ([key], data[key]) for key in ("build_minutes_per_arch", "gb_per_job") if key in data
    ]
    numbers += [
        (["versions", i, "build_minutes_per_arch"], v["build_minutes_per_arch"])
        for i, v in enumerate(data["versions"])
        if "build_minutes_per_arch" in v
    ]
    for where, value in numbers:
        if not math.isfinite(value):
            f.add(where, f"{value!r} is not a finite number: give the measured value, e.g. 4")
    _data_checks(f, data)
    _farm_requires_checks(f, name, data.get("farm_requires", []), known)
    if data.get("import_with_torch") and data["abi"]["kind"] != "torch-free":
        f.add(
            ["import_with_torch"],
            f"only for kind 'torch-free': a {data['abi']['kind']!r} wheel is always imported "
            f"beside its torch; drop it",
        )
    for key, value in data.get("env", {}).items():
        if set("{}") & set(ENV_PLACEHOLDER.sub("", value)):
            f.add(
                ["env", key],
                f"{_clip(value)}: a brace must be a placeholder, {{cuda}} (e.g. 13.0) or "
                f"{{cuda_major}} (e.g. 13)",
            )
    _arch_checks(f, data["arch"], versions)


def _arch_checks(f: _File, arch: dict[str, Any], versions: list[PackageVersion]) -> None:
    """What each `arch.via` needs beside it (and `none`, with no device code, takes nothing)."""
    if arch["via"] == "env" and "env" not in arch:
        f.add(["arch", "env"], "required when via is 'env' (the package's own arch variable)")
    if arch["via"] == "none":
        for key in sorted(set(arch) - {"via"}):
            f.add(["arch", key], "not allowed when via is 'none' (no device code, no arch list)")
    if arch["via"] == "patch" and not any(v.patches for v in versions):
        f.add(
            ["arch", "via"],
            "'patch' needs a patch in versions[].patches that makes setup.py honour "
            "TORCH_CUDA_ARCH_LIST",
        )


def _package(
    path: Path,
    root: FarmRoot,
    policy: ArchPolicy | None,
    errors: _Collector,
    known: frozenset[str],
) -> Package | None:
    data, tree = _read(path, root.schemas, "package", errors)
    if data is None:
        return None
    f = _File(path, tree, errors)
    before = errors.total
    versions = _versions(f, data["versions"], root)
    _cross_field_checks(f, data, versions, known)
    constraints = data.get("constraints", {})
    cuda_spec = f.spec(constraints.get("cuda"), ["constraints", "cuda"])
    torch_spec = f.spec(constraints.get("torch"), ["constraints", "torch"])
    python_spec = f.spec(constraints.get("python"), ["constraints", "python"])
    rules = _arch_rules(f, data["arch"].get("override", []), cuda_spec, policy)
    package_abi = _abi(f, data["abi"], ["abi"])
    exclusions = [
        Exclusion(line=_line(tree, ["exclude", i])[0], **{k: str(v) for k, v in ex.items()})
        for i, ex in enumerate(data.get("exclude", []))
    ]
    if errors.total != before:
        return None
    arch = data["arch"]
    return Package(
        name=canonicalize_name(data["name"]),
        display_name=data["name"],
        file=path,
        versions=tuple(versions),
        abi=package_abi,
        arch_via=arch["via"],
        arch_env=arch.get("env"),
        arch_format=arch.get("format", "torch"),
        arch_overrides=tuple(rules),
        local_version_env=data.get("local_version", {}).get("env"),
        env=data.get("env", {}),
        import_with_torch=data.get("import_with_torch", False),
        farm_requires=tuple(canonicalize_name(r) for r in data.get("farm_requires", [])),
        build_requires=tuple(data.get("build_requires", [])),
        torch_spec=torch_spec,
        python_spec=python_spec,
        cuda_spec=cuda_spec,
        platforms=tuple(constraints.get("platforms", NAMES)),
        exclusions=tuple(exclusions),
        imports=tuple(data["import"]),
        import_requires=tuple(data.get("import_requires", [])),
        vendor_allow=tuple(data.get("vendor_allow", [])),
        build_minutes_per_arch=float(data.get("build_minutes_per_arch", 10.0)),
        gb_per_job=float(data.get("gb_per_job", 3.0)),
    )


def _releases(
    path: Path, schemas: Path, errors: _Collector
) -> tuple[str, tuple[TorchRelease, ...]]:
    data, tree = _read(path, schemas, "torch", errors)
    if data is None:
        return "", ()
    f = _File(path, tree, errors)
    url = data["index_url"]
    try:  # str.format fills in {cuda}; another field would fail, or reach into the value
        fields = {(n, spec, conv) for _, n, spec, conv in string.Formatter().parse(url) if n}
        plain = fields <= {("cuda", "", None)}
    except ValueError:  # an unmatched brace
        plain = False
    if not plain:
        f.add(["index_url"], f"{_clip(url)} may hold no field but {{cuda}}")
    releases: list[TorchRelease] = []
    for i, r in enumerate(data["releases"]):
        lo, hi = (Version(v) for v in r["python"])
        release = TorchRelease(
            version=Version(r["torch"]),
            python_min=lo,
            python_max=hi,
            cxx_std=r["cxx_std"],
            builds={c: tuple(p) for c, p in r["builds"].items()},
            pypi=dict(r.get("pypi", {})),
        )
        for platform, cuda in release.pypi.items():
            if platform not in release.builds.get(cuda, ()):
                there = ", ".join(c for c, p in release.builds.items() if platform in p)
                f.add(
                    ["releases", i, "pypi", platform],
                    f"{cuda} on {platform} is not one of torch {release.minor}'s builds: "
                    f"give one of {there or 'its builds (none is on ' + platform + ')'}",
                )
        if lo > hi or lo.major != hi.major:
            f.add(
                ["releases", i, "python"],
                f"[{r['python'][0]!r}, {r['python'][1]!r}] is not a range: give the oldest and "
                f"the newest Python of one major version, e.g. ['3.10', '3.14']",
            )
        elif any(other.minor == release.minor for other in releases):
            f.add(["releases", i, "torch"], f"torch {release.minor} is listed twice: keep one")
        else:
            releases.append(release)
    return url, tuple(releases)


def _arch(path: Path, schemas: Path, errors: _Collector) -> ArchPolicy | None:
    data, tree = _read(path, schemas, "arch", errors)
    if data is None:
        return None
    policy = {
        cuda: {plat: ArchList.parse(text) for plat, text in plats.items()}
        for cuda, plats in data["policy"].items()
    }
    supported = {
        cuda: (ArchList.parse(lo).archs[0].sm, ArchList.parse(hi).archs[0].sm)
        for cuda, (lo, hi) in data["supported"].items()
    }
    for cuda, (lo, hi) in supported.items():
        if lo > hi:
            _File(path, tree, errors).add(
                ["supported", cuda],
                f"{data['supported'][cuda]!r} is reversed: give the oldest SM first, e.g. "
                f"['7.5', '12.1']",
            )
            return None
    return ArchPolicy(policy=policy, supported=supported)


def _farm(path: Path, schemas: Path, errors: _Collector) -> FarmConfig | None:
    data, _ = _read(path, schemas, "farm", errors)
    if data is None:
        return None
    return FarmConfig(
        max_jobs_per_shard=data["max_jobs_per_shard"],
        hosted_job_limit_minutes=data["hosted_job_limit_minutes"],
        publish_batch_wheels=data["publish_batch_wheels"],
        platforms={k: PlatformInfo(**v) for k, v in data["platforms"].items()},
        split_compile=_split_compile(data.get("split_compile")),
    )


def _split_compile(data: dict[str, Any] | None) -> SplitCompile | None:
    if data is None:
        return None
    return SplitCompile(
        over_minutes=float(data["over_minutes"]),
        shard_minutes=float(data["shard_minutes"]),
        job_overhead_minutes=float(data["job_overhead_minutes"]),
        link_fraction=float(data["link_fraction"]),
        platforms=tuple(data["platforms"]),
    )


def _cross_check(
    releases: tuple[TorchRelease, ...], arch: ArchPolicy, root: Path, errors: _Collector
) -> None:
    """Every CUDA build torch ships needs an arch list for that platform, or nothing builds."""
    for r in releases:
        for cuda, plats in r.builds.items():
            lists = arch.policy.get(str(cuda_version(cuda)), {})
            for plat in plats:
                if plat not in lists:
                    errors.add(
                        root / "arch.yaml",
                        0,
                        f"policy.{cuda_version(cuda)}",
                        f"no arch list for {plat}, but torch {r.version} ships {cuda} "
                        f"for it (torch.yaml); add one",
                    )


def _farm_requires_cycles(packages: list[Package], errors: _Collector) -> None:
    """A package may not require itself through others: no build of the cycle could go first."""
    graph: dict[str, tuple[str, ...]] = {p.name: p.farm_requires for p in packages}
    files: dict[str, Path] = {p.name: p.file for p in packages}
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            cycle = " -> ".join((*path[path.index(name) :], name))
            errors.add(files[name], 0, "farm_requires", f"a cycle: {cycle}; break it")
            return
        if name in done:
            return
        for req in graph.get(name, ()):
            visit(req, (*path, name))
        done.add(name)

    for name in sorted(graph):
        visit(name, ())


def load_matrix(root: FarmRoot) -> Matrix:
    """Load torch.yaml, arch.yaml, farm.yaml and packages/*.yaml of one farm root; raise
    ConfigError with every problem found."""
    errors = _Collector()
    folder, schemas = root.matrix, root.schemas
    index_url, releases = _releases(folder / "torch.yaml", schemas, errors)
    arch = _arch(folder / "arch.yaml", schemas, errors)
    farm = _farm(folder / "farm.yaml", schemas, errors)
    files = sorted(root.packages.glob("*.yaml"))
    known = frozenset(canonicalize_name(p.stem) for p in files)
    packages = [_package(p, root, arch, errors, known) for p in files]
    if not packages and not errors.total:
        errors.add(root.packages, 0, "", "no package files (*.yaml) found")
    _farm_requires_cycles([p for p in packages if p is not None], errors)
    if arch is not None:
        _cross_check(releases, arch, folder, errors)
    if errors.total or arch is None or farm is None:
        raise ConfigError(errors.report())
    return Matrix(
        index_url=index_url,
        releases=releases,
        arch=arch,
        farm=farm,
        packages=tuple(p for p in packages if p is not None),
        root=root,
    )
