"""Load and validate the maintainers' YAML. Every problem in every file is collected and reported
at once as `file:line: key: message`, with "did you mean" for typos."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, cast

import yaml
from jsonschema import Draft202012Validator, ValidationError
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from referencing import Registry, Resource

from wheelfarm.core.errors import ConfigError
from wheelfarm.core.label import cuda_version
from wheelfarm.core.platforms import NAMES
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.model import (
    ArchList,
    ArchPolicy,
    ArchRule,
    Exclusion,
    FarmConfig,
    Matrix,
    Package,
    PackageVersion,
    PlatformInfo,
    Source,
    TorchRelease,
)


@dataclass
class _Collector:
    """Gathers problems across files so the maintainer fixes them all in one pass."""

    problems: list[str] = field(default_factory=list)

    def add(self, file: Path, line: int, key: str, message: str) -> None:
        where = f"{file}:{line}" if line else str(file)
        self.problems.append(f"{where}: {key}: {message}" if key else f"{where}: {message}")


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
        yield line, key, f"{error.instance!r} is not allowed (allowed: {', '.join(allowed)}){tip}"
    elif error.validator == "oneOf" and path and path[-1] == "source":
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
            f"{error.instance!r} is not a source: use {{sdist: NAME, sha256: HEX}}, "
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
    else:
        yield line, key, f"{error.instance!r}: {error.message}"


def _read(
    path: Path, schemas: Path, schema: str, errors: _Collector
) -> tuple[Any, yaml.Node | None]:
    """Parse one file; schema errors are collected, a YAML syntax error stops that file only."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        errors.add(path, 0, "", f"cannot read it: {exc}")
        return None, None
    try:
        tree = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        errors.add(path, mark.line + 1 if mark else 0, "", f"YAML syntax error: {exc}")
        return None, None
    before = len(errors.problems)
    for error in sorted(
        _validator(schemas, schema).iter_errors(data), key=lambda e: list(map(str, e.path))
    ):
        for line, key, message in _schema_problems(error, tree):
            errors.add(path, line, key, message)
    return (data if len(errors.problems) == before else None), tree


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


def _versions(f: _File, items: list[dict[str, Any]], patches: Path) -> list[PackageVersion]:
    out = []
    for i, item in enumerate(items):
        try:
            version = Version(item["version"])
        except InvalidVersion:
            f.add(["versions", i, "version"], f"{item['version']!r} is not a PEP 440 version")
            continue
        if version.local:
            f.add(
                ["versions", i, "version"],
                f"{item['version']!r} has a local label; the farm adds its own",
            )
        for j, patch in enumerate(item.get("patches", [])):
            if Path(patch).name != patch or not (patches / patch).is_file():
                f.add(
                    ["versions", i, "patches", j],
                    f"{patch!r} is not a file name in {patches}: put the patch there and "
                    f"name it without a folder",
                )
        out.append(
            PackageVersion(
                version=version,
                source=Source(**item["source"]),
                patches=tuple(item.get("patches", [])),
                yanked=item.get("yanked"),
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


def _cross_field_checks(f: _File, data: dict[str, Any], versions: list[PackageVersion]) -> None:
    name = canonicalize_name(data["name"])
    if f.path.stem != name:
        f.add(["name"], f"{data['name']!r} must match the file name: rename it to {name}.yaml")
    if data["abi"]["kind"] == "torch-stable" and "min_torch" not in data["abi"]:
        f.add(
            ["abi", "min_torch"],
            "required for kind 'torch-stable' (the TORCH_TARGET_VERSION, e.g. '2.10')",
        )
    arch = data["arch"]
    if arch["via"] == "env" and "env" not in arch:
        f.add(["arch", "env"], "required when via is 'env' (the package's own arch variable)")
    if arch["via"] == "patch" and not any(v.patches for v in versions):
        f.add(
            ["arch", "via"],
            "'patch' needs a patch in versions[].patches that makes setup.py honour "
            "TORCH_CUDA_ARCH_LIST",
        )


def _package(
    path: Path, root: FarmRoot, policy: ArchPolicy | None, errors: _Collector
) -> Package | None:
    data, tree = _read(path, root.schemas, "package", errors)
    if data is None:
        return None
    f = _File(path, tree, errors)
    before = len(errors.problems)
    versions = _versions(f, data["versions"], root.patches)
    _cross_field_checks(f, data, versions)
    constraints = data.get("constraints", {})
    cuda_spec = f.spec(constraints.get("cuda"), ["constraints", "cuda"])
    torch_spec = f.spec(constraints.get("torch"), ["constraints", "torch"])
    python_spec = f.spec(constraints.get("python"), ["constraints", "python"])
    rules = _arch_rules(f, data["arch"].get("override", []), cuda_spec, policy)
    exclusions = [
        Exclusion(line=_line(tree, ["exclude", i])[0], **{k: str(v) for k, v in ex.items()})
        for i, ex in enumerate(data.get("exclude", []))
    ]
    if len(errors.problems) != before:
        return None
    abi, arch = data["abi"], data["arch"]
    return Package(
        name=canonicalize_name(data["name"]),
        display_name=data["name"],
        file=path,
        versions=tuple(versions),
        abi=abi["kind"],
        min_torch=abi.get("min_torch"),
        python_abi3=abi.get("python_abi3", False),
        arch_via=arch["via"],
        arch_env=arch.get("env"),
        arch_format=arch.get("format", "torch"),
        arch_overrides=tuple(rules),
        local_version_env=data.get("local_version", {}).get("env"),
        env=data.get("env", {}),
        build_requires=tuple(data.get("build_requires", [])),
        torch_spec=torch_spec,
        python_spec=python_spec,
        cuda_spec=cuda_spec,
        platforms=tuple(constraints.get("platforms", NAMES)),
        exclusions=tuple(exclusions),
        imports=tuple(data["import"]),
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
    releases = []
    for i, r in enumerate(data["releases"]):
        line = _line(tree, ["releases", i])[0]
        try:
            for cuda in r["builds"]:
                cuda_version(cuda)
            releases.append(
                TorchRelease(
                    version=Version(r["torch"]),
                    python_min=Version(r["python"][0]),
                    python_max=Version(r["python"][1]),
                    cxx_std=r["cxx_std"],
                    builds={c: tuple(p) for c, p in r["builds"].items()},
                )
            )
        except (InvalidVersion, ValueError) as exc:
            errors.add(path, line, f"releases[{i}]", str(exc))
    return data["index_url"], tuple(releases)


def _arch(path: Path, schemas: Path, errors: _Collector) -> ArchPolicy | None:
    data, _ = _read(path, schemas, "arch", errors)
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
    return ArchPolicy(policy=policy, supported=supported)


def _farm(path: Path, schemas: Path, errors: _Collector) -> FarmConfig | None:
    data, _ = _read(path, schemas, "farm", errors)
    if data is None:
        return None
    return FarmConfig(
        max_jobs_per_shard=data["max_jobs_per_shard"],
        hosted_job_limit_minutes=data["hosted_job_limit_minutes"],
        platforms={k: PlatformInfo(**v) for k, v in data["platforms"].items()},
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


def load_matrix(root: FarmRoot) -> Matrix:
    """Load torch.yaml, arch.yaml, farm.yaml and packages/*.yaml of one farm root; raise
    ConfigError with every problem found."""
    errors = _Collector()
    folder, schemas = root.matrix, root.schemas
    index_url, releases = _releases(folder / "torch.yaml", schemas, errors)
    arch = _arch(folder / "arch.yaml", schemas, errors)
    farm = _farm(folder / "farm.yaml", schemas, errors)
    packages = [_package(p, root, arch, errors) for p in sorted(root.packages.glob("*.yaml"))]
    if not packages and not errors.problems:
        errors.add(root.packages, 0, "", "no package files (*.yaml) found")
    if arch is not None:
        _cross_check(releases, arch, folder, errors)
    if errors.problems or arch is None or farm is None:
        raise ConfigError(errors.problems)
    return Matrix(
        index_url=index_url,
        releases=releases,
        arch=arch,
        farm=farm,
        packages=tuple(p for p in packages if p is not None),
        root=root,
    )
