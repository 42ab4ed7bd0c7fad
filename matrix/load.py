"""Load and validate the maintainers' YAML: every file of matrix/ (the grid, the fact files and
packages/*.yaml) goes through the one reader (matrix/reader.py) once, into the Matrix every
layer is handed. Every problem in every file is reported at once as `file:line: key: message`,
with "did you mean" for typos."""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from wheelfarm.core.errors import ConfigError, UsageError
from wheelfarm.core.platforms import NAMES
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.facts import read_facts
from wheelfarm.matrix.load_grid import (
    arch_list,
    cross_check,
    read_arch,
    read_farm,
    read_releases,
)
from wheelfarm.matrix.model import (
    DIST_PLACEHOLDER,
    ENV_PLACEHOLDER,
    Abi,
    ArchPolicy,
    ArchRule,
    Exclusion,
    Matrix,
    Package,
    PackageVersion,
    PythonAbi,
    Source,
)
from wheelfarm.matrix.reader import Document, Problems, clip, line_at, read_yaml, short

# every file of matrix/ beside packages/, each with its schema in matrix/schema/NAME.schema.json
FILES = ("torch", "arch", "farm", "toolkits", "compat", "libraries", "drivers")
MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
DIST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")  # PEP 508 names


def _abi(f: Document, data: dict[str, Any], where: list[str | int]) -> Abi:
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


def _versions(f: Document, items: list[dict[str, Any]], root: FarmRoot) -> list[PackageVersion]:
    out: list[PackageVersion] = []
    seen: dict[Version, int] = {}
    for i, item in enumerate(items):
        try:
            version = Version(item["version"])
        except InvalidVersion:
            f.add(["versions", i, "version"], f"{clip(item['version'])} is not a PEP 440 version")
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
                    f"{clip(patch)} is not a file name in {root.patches}: put the patch there "
                    f"and name it without a folder",
                )
        raw = item["source"]
        source = Source(
            **{**raw, "submodules": tuple(raw["submodules"])}
            if isinstance(raw.get("submodules"), list)
            else raw
        )
        if source.path is not None:
            try:
                root.inside(source.path, "source path")
            except (UsageError, ValueError) as exc:  # ValueError: a NUL in the path
                f.add(
                    ["versions", i, "source", "path"],
                    f"{clip(source.path)} cannot be a source folder ({exc}): give a folder "
                    f"inside the farm root, relative to it (e.g. demo/NAME)",
                )
        out.append(
            PackageVersion(
                version=version,
                source=source,
                patches=tuple(item.get("patches", [])),
                yanked=item.get("yanked"),
                allow_yanked=item.get("allow_yanked", False),
                abi=_abi(f, item["abi"], ["versions", i, "abi"]) if "abi" in item else None,
                build_minutes_per_arch=item.get("build_minutes_per_arch"),
                torch_spec=f.spec(item["torch"], ["versions", i, "torch"])
                if "torch" in item
                else None,
                env=item.get("env", {}),
            )
        )
    return out


def _arch_rules(
    f: Document, rules: list[dict[str, Any]], cuda_spec: SpecifierSet, policy: ArchPolicy | None
) -> list[ArchRule]:
    """Overrides, each checked against what every CUDA the package builds for can compile."""
    out = []
    for i, rule in enumerate(rules):
        spec = f.spec(rule.get("cuda"), ["arch", "override", i, "cuda"])
        version = (
            f.spec(rule["version"], ["arch", "override", i, "version"])
            if "version" in rule
            else None
        )
        archs = arch_list(f, ["arch", "override", i, "archs"], rule["archs"])
        if archs is None:
            continue
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
                archs=archs,
                cuda=spec if rule.get("cuda") else None,
                platform=rule.get("platform"),
                version=version,
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
        return f"not a PEP 508 requirement ({short(str(exc), 120)})"
    if requirement.url:
        return "a URL requirement; a git or URL dependency goes through the source policy"
    return None


def module_problem(name: str) -> str | None:
    """Why `name` is not a dotted module name the import check can import by name, or None."""
    if MODULE_NAME.fullmatch(name):
        return None
    return "not a dotted module name"


def _farm_requires_checks(
    f: Document, name: str, data: dict[str, Any], known: frozenset[str]
) -> None:
    required = data.get("farm_requires", [])
    for i, req in enumerate(required):
        if canonicalize_name(req) == name:
            f.add(["farm_requires", i], f"{req!r} is this package itself: drop it")
        elif canonicalize_name(req) not in known:
            f.add(
                ["farm_requires", i],
                f"{req!r} is no package of this farm (packages/*.yaml): add its file, or list "
                f"it in import_requires if PyPI has a wheel",
            )
    imported = {canonicalize_name(r) for r in required}
    for i, req in enumerate(data.get("farm_build_requires", [])):
        if canonicalize_name(req) not in imported:
            f.add(
                ["farm_build_requires", i],
                f"{req!r} is not in farm_requires: add it there too (the build and the import "
                f"check install the same farm wheel)",
            )


def _distribution_checks(f: Document, data: dict[str, Any]) -> None:
    """A per-CUDA name must name a distribution for every CUDA tag, and differ by CUDA."""
    template = data.get("distribution")
    if template is None:
        return
    if DIST_PLACEHOLDER not in template:
        f.add(
            ["distribution"],
            f"{clip(template)} has no {DIST_PLACEHOLDER}: it would be one name for every CUDA; "
            f"drop it (the wheels are named {data['name']!r}) or add {DIST_PLACEHOLDER}",
        )
    elif not DIST_NAME.fullmatch(template.replace(DIST_PLACEHOLDER, "cu130")):
        f.add(
            ["distribution"],
            f"{clip(template)} is no distribution name once {DIST_PLACEHOLDER} is cu130: start "
            f"and end with a letter or digit, e.g. 'spconv-{DIST_PLACEHOLDER}'",
        )


def _data_checks(f: Document, data: dict[str, Any]) -> None:
    """Values that reach pip's argv and the import check: data in their plain shapes only."""
    for key in ("build_requires", "import_requires"):
        for i, req in enumerate(data.get(key, [])):
            if problem := requirement_problem(req):
                f.add(
                    [key, i],
                    f"{clip(req)} is {problem}: give a name with an optional version, e.g. "
                    f"'numpy>=1.26'",
                )
    for key in ("import", "import_gpu"):
        for i, module in enumerate(data.get(key, [])):
            if problem := module_problem(module):
                f.add(
                    [key, i],
                    f"{clip(module)} is {problem}: give the module to import, e.g. 'flash_attn' "
                    f"or 'torch_scatter.scatter'",
                )
    if not data["import"] and not data.get("import_gpu"):
        f.add(
            ["import"],
            "is empty: name a module the import check imports, e.g. 'flash_attn' (empty only "
            "where import_gpu names the modules that need a GPU)",
        )
    for i, module in enumerate(data.get("import_gpu", [])):
        if module in data["import"]:
            f.add(
                ["import_gpu", i],
                f"{clip(module)} is in both import and import_gpu: keep it in import_gpu if it "
                f"needs a GPU to import, else in import",
            )


def _cross_field_checks(
    f: Document, data: dict[str, Any], versions: list[PackageVersion], known: frozenset[str]
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
    _farm_requires_checks(f, name, data, known)
    _distribution_checks(f, data)
    if data.get("import_with_torch") and data["abi"]["kind"] != "torch-free":
        f.add(
            ["import_with_torch"],
            f"only for kind 'torch-free': a {data['abi']['kind']!r} wheel is always imported "
            f"beside its torch; drop it",
        )
    _env_checks(f, data)
    _arch_checks(f, data["arch"], versions)


def _env_checks(f: Document, data: dict[str, Any]) -> None:
    """Every brace of `env`, a version's `env` and `platform_env` is a placeholder, and {archs}
    has a list to name."""
    values = [(["env", k], v) for k, v in data.get("env", {}).items()]
    values += [
        (["versions", i, "env", k], v)
        for i, item in enumerate(data["versions"])
        for k, v in item.get("env", {}).items()
    ]
    values += [
        (["platform_env", platform, k], v)
        for platform, env in data.get("platform_env", {}).items()
        for k, v in env.items()
    ]
    for where, value in values:
        if set("{}") & set(ENV_PLACEHOLDER.sub("", value)):
            f.add(
                where,
                f"{clip(value)}: a brace must be a placeholder, {{cuda}} (e.g. 13.0), "
                f"{{cuda_major}} (e.g. 13) or {{archs}} (the arch list in arch.format)",
            )
        elif "{archs}" in value and data["arch"]["via"] == "none":
            f.add(
                where,
                f"{clip(value)}: {{archs}} names no arch under arch.via 'none' (no device code); "
                f"drop it or give the package an arch list",
            )


def _arch_checks(f: Document, arch: dict[str, Any], versions: list[PackageVersion]) -> None:
    """What each `arch.via` needs beside it (and `none`, with no device code, takes nothing)."""
    if arch["via"] == "env" and "env" not in arch:
        f.add(["arch", "env"], "required when via is 'env' (the package's own arch variable)")
    if arch["via"] == "none":
        for key in sorted(set(arch) - {"via"}):
            f.add(["arch", key], "not allowed when via is 'none' (no device code, no arch list)")
    if arch.get("one_arch_per_binary") and arch.get("some_archs_per_binary"):
        f.add(
            ["arch", "some_archs_per_binary"],
            "not with one_arch_per_binary: say one layout (one arch in each binary, or some)",
        )
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
    errors: Problems,
    known: frozenset[str],
) -> Package | None:
    data, f = read_yaml(path, root.schemas, "package", errors)
    if data is None:
        return None
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
        Exclusion(line=line_at(f.tree, ["exclude", i])[0], **{k: str(v) for k, v in ex.items()})
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
        one_arch_per_binary=arch.get("one_arch_per_binary", False),
        some_archs_per_binary=arch.get("some_archs_per_binary", False),
        local_version_env=data.get("local_version", {}).get("env"),
        env=data.get("env", {}),
        platform_env=data.get("platform_env", {}),
        import_with_torch=data.get("import_with_torch", False),
        distribution=data.get("distribution"),
        farm_requires=tuple(canonicalize_name(r) for r in data.get("farm_requires", [])),
        farm_build_requires=tuple(
            canonicalize_name(r) for r in data.get("farm_build_requires", [])
        ),
        build_requires=tuple(data.get("build_requires", [])),
        torch_spec=torch_spec,
        python_spec=python_spec,
        cuda_spec=cuda_spec,
        platforms=tuple(constraints.get("platforms", NAMES)),
        exclusions=tuple(exclusions),
        imports=tuple(data["import"]),
        imports_gpu=tuple(data.get("import_gpu", [])),
        built_on=dict(data.get("built_on", {})),
        import_requires=tuple(data.get("import_requires", [])),
        vendor_allow=tuple(data.get("vendor_allow", [])),
        cuda_minor_code=tuple(Version(v) for v in data.get("cuda_minor_code", {}).get("at", [])),
        cuda_minor_reason=data.get("cuda_minor_code", {}).get("reason", ""),
        build_minutes_per_arch=float(data.get("build_minutes_per_arch", 10.0)),
        gb_per_job=float(data.get("gb_per_job", 3.0)),
    )


def _farm_requires_cycles(packages: list[Package], errors: Problems) -> None:
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


def _one_owner_per_wheel_name(
    packages: list[Package], cuda_tags: list[str], errors: Problems
) -> None:
    """Two files may not name one wheel (by `name` or a `distribution` of any CUDA tag): their
    builds would share ids, and one file's source would build the other's wheels."""
    owners: dict[str, Package] = {}
    for package in packages:
        claimed = {package.name, *(package.distribution_for(c) for c in cuda_tags)}
        told: set[Path] = set()  # one line per pair of files, not one per CUDA tag
        for wheel_name in sorted(claimed):
            first = owners.setdefault(wheel_name, package)
            if first is not package and first.file not in told:
                told.add(first.file)
                key = "name" if wheel_name == package.name else "distribution"
                errors.add(
                    package.file,
                    0,
                    key,
                    f"wheel name {wheel_name!r} is also {first.file.name}'s: one package file per "
                    f"wheel name; drop one, or give this one a distribution of its own",
                )


def _unknown_files(root: FarmRoot, errors: Problems) -> None:
    """A YAML file in matrix/ that no loader reads is a misnamed one: nothing would check it."""
    for path in sorted(root.matrix.glob("*.y*ml")):
        if path.stem not in FILES:
            hint = difflib.get_close_matches(path.stem, FILES, n=1)
            tip = f"; did you mean {hint[0]}.yaml?" if hint else ""
            known = ", ".join(f"{name}.yaml" for name in FILES)
            errors.add(path, 0, "", f"no farm file has this name (they are: {known}){tip}")


def load_matrix(root: FarmRoot) -> Matrix:
    """Load every YAML file of one farm root (FILES and packages/*.yaml), each once; raise
    ConfigError with every problem found."""
    errors = Problems()
    folder, schemas = root.matrix, root.schemas
    _unknown_files(root, errors)
    index_url, releases = read_releases(folder / "torch.yaml", schemas, errors)
    arch = read_arch(folder / "arch.yaml", schemas, errors)
    farm = read_farm(folder / "farm.yaml", schemas, errors)
    facts = read_facts(root, errors)
    files = sorted(root.packages.glob("*.yaml"))
    known = frozenset(canonicalize_name(p.stem) for p in files)
    packages = [_package(p, root, arch, errors, known) for p in files]
    if not packages and not errors.total:
        errors.add(root.packages, 0, "", "no package files (*.yaml) found")
    _farm_requires_cycles([p for p in packages if p is not None], errors)
    _one_owner_per_wheel_name(
        [p for p in packages if p is not None],
        sorted({c for r in releases for c in r.builds}),
        errors,
    )
    if arch is not None:
        cross_check(releases, arch, folder, errors)
    if errors.total or arch is None or farm is None or facts is None:
        raise ConfigError(errors.report())
    return Matrix(
        index_url=index_url,
        releases=releases,
        arch=arch,
        farm=farm,
        facts=facts,
        packages=tuple(p for p in packages if p is not None),
        root=root,
    )
