"""The grid files' loaders: torch.yaml (the release grid), arch.yaml (the SM policy) and
farm.yaml (runners and limits), each read through the one reader and held to each other."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

from packaging.version import Version

from wheelfarm.core.label import cuda_version
from wheelfarm.matrix.model import (
    ArchList,
    ArchPolicy,
    CudaMajors,
    FarmConfig,
    GpuCheck,
    PlatformInfo,
    Pool,
    PythonGroups,
    SplitCompile,
    TierRule,
    TorchRelease,
)
from wheelfarm.matrix.reader import Document, Problems, clip, read_yaml


def read_releases(
    path: Path, schemas: Path, errors: Problems
) -> tuple[str, tuple[TorchRelease, ...]]:
    """torch.yaml: the index URL and the releases, each release checked on its own."""
    data, f = read_yaml(path, schemas, "torch", errors)
    if data is None:
        return "", ()
    url = data["index_url"]
    try:  # str.format fills in {cuda}; another field would fail, or reach into the value
        fields = {(n, spec, conv) for _, n, spec, conv in string.Formatter().parse(url) if n}
        plain = fields <= {("cuda", "", None)}
    except ValueError:  # an unmatched brace
        plain = False
    if not plain:
        f.add(["index_url"], f"{clip(url)} may hold no field but {{cuda}}")
    releases: list[TorchRelease] = []
    for i, r in enumerate(data["releases"]):
        lo, hi = (Version(v) for v in r["python"])
        release = TorchRelease(
            version=Version(r["torch"]),
            python_min=lo,
            python_max=hi,
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


def arch_list(doc: Document, where: list[str | int], text: str) -> ArchList | None:
    """An arch list of a YAML file, or None with its problem added: the schema's pattern takes
    each item, not the list (+PTX on a variant, an SM twice)."""
    try:
        return ArchList.parse(text)
    except ValueError as exc:
        doc.add(where, str(exc))
        return None


def read_arch(path: Path, schemas: Path, errors: Problems) -> ArchPolicy | None:
    """arch.yaml: the arch lists per CUDA and platform, and each toolkit's SM range."""
    data, doc = read_yaml(path, schemas, "arch", errors)
    if data is None:
        return None
    policy: dict[str, dict[str, ArchList]] = {}
    for cuda, plats in data["policy"].items():
        for plat, text in plats.items():
            if (archs := arch_list(doc, ["policy", cuda, plat], text)) is not None:
                policy.setdefault(cuda, {})[plat] = archs
    supported = {
        cuda: (ArchList.parse(lo).archs[0].sm, ArchList.parse(hi).archs[0].sm)
        for cuda, (lo, hi) in data["supported"].items()
    }
    for cuda, (lo, hi) in supported.items():
        if lo > hi:
            doc.add(
                ["supported", cuda],
                f"{data['supported'][cuda]!r} is reversed: give the oldest SM first, e.g. "
                f"['7.5', '12.1']",
            )
            return None
    return ArchPolicy(policy=policy, supported=supported)


def read_farm(path: Path, schemas: Path, errors: Problems) -> FarmConfig | None:
    """farm.yaml: runners, containers and limits."""
    data, _ = read_yaml(path, schemas, "farm", errors)
    if data is None:
        return None
    return FarmConfig(
        max_jobs_per_shard=data["max_jobs_per_shard"],
        hosted_job_limit_minutes=data["hosted_job_limit_minutes"],
        publish_batch_wheels=data["publish_batch_wheels"],
        platforms={k: PlatformInfo(**v) for k, v in data["platforms"].items()},
        split_compile=_split_compile(data.get("split_compile")),
        python_groups=_python_groups(data.get("python_groups")),
        cuda_majors=_cuda_majors(data.get("cuda_majors")),
        pool=_pool(data["pool"]),
        gpu_check=_gpu_check(data.get("gpu_check")),
    )


def _gpu_check(data: dict[str, Any] | None) -> GpuCheck | None:
    if data is None:
        return None
    return GpuCheck(
        runner=data["runner"] or None,
        platforms=tuple(data["platforms"]),
        minutes_per_wheel=float(data["minutes_per_wheel"]),
    )


def _pool(data: dict[str, Any]) -> Pool:
    return Pool(
        lanes=int(data["lanes"]),
        shard_hours=float(data["shard_hours"]),
        run_days=float(data["run_days"]),
        tiers=tuple(tuple(TierRule(**rule) for rule in tier) for tier in data["tiers"]),
    )


def _python_groups(data: dict[str, Any] | None) -> PythonGroups | None:
    if data is None:
        return None
    return PythonGroups(
        next_python_fraction=float(data["next_python_fraction"]),
        platforms=tuple(data["platforms"]),
    )


def _cuda_majors(data: dict[str, Any] | None) -> CudaMajors | None:
    return None if data is None else CudaMajors(variant_minutes=float(data["variant_minutes"]))


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


def cross_check(
    releases: tuple[TorchRelease, ...], arch: ArchPolicy, root: Path, errors: Problems
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
