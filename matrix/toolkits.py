"""The CUDA toolkit table (toolkits.yaml) held to the compatibility facts (compat.yaml): which
toolkit, components and host compiler each (CUDA, platform) builds with, and why a cell its
runner cannot build is never planned. Both files are data with sources; this module only joins
them with farm.yaml and refuses a table that contradicts the facts."""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import Version

from wheelfarm.core.errors import ConfigError
from wheelfarm.core.platforms import os_of
from wheelfarm.core.root import FarmRoot
from wheelfarm.matrix.facts import (
    Compat,
    HostCompilers,
    Image,
    Runner,
    Toolkit,
    ToolkitTable,
    load_facts,
)
from wheelfarm.matrix.model import FarmConfig, Matrix

_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")


def unpinned(container: str) -> str:
    """'repo:tag@sha256:...' -> 'repo:tag', the key compat.yaml knows an image by.

    >>> unpinned("quay.io/pypa/manylinux_2_28_x86_64:2026.05.07-2@sha256:" + "0" * 64)
    'quay.io/pypa/manylinux_2_28_x86_64:2026.05.07-2'
    """
    return container.split("@", 1)[0]


@dataclass(frozen=True)
class _Support:
    """What each platform's runner can build: farm.yaml's runners and images, the toolkit table
    and the facts, checked against each other once (`support`)."""

    table: ToolkitTable
    compat: Compat
    farm: FarmConfig

    def blocker(self, cuda: str, python: str, platform: str) -> str | None:
        """Why (cuda, python, platform) cannot be built on its runner; None when it can."""
        if cuda not in self.table.toolkits:
            return f"toolkits.yaml has no toolkit for {cuda}"
        tk = self.table.toolkits[cuda]
        host = self.compat.cuda[tk.minor]
        info = self.farm.platforms[platform]
        if os_of(platform) == "linux":
            image = unpinned(info.container)
            pythons = self.compat.images[image].pythons
            where = f"the {platform} image {image}"
            compiler, accepts = tk.gcc_toolset is not None, f"gcc <= {host.gcc_max}"
        else:
            pythons = self.compat.runners[info.runner].pythons
            where = f"the {platform} runner {info.runner}"
            compiler, accepts = tk.msvc_toolset is not None, f"MSVC {_msc(host.msvc)}"
        if python not in pythons:
            return f"{where} has no CPython {python} (has {', '.join(pythons)}; compat.yaml)"
        if not compiler:
            return (
                f"{where} has no host compiler CUDA {tk.minor} accepts ({accepts}; toolkits.yaml "
                f"{cuda}, compat.yaml: {host.source})"
            )
        return None


def _msc(bounds: tuple[int, int]) -> str:
    """'19.10-19.39' for the _MSC_VER range [1910, 1940)."""
    lo, hi = bounds
    return f"{lo // 100}.{lo % 100}-{(hi - 1) // 100}.{(hi - 1) % 100}"


def _problems(table: ToolkitTable, compat: Compat, farm: FarmConfig) -> list[str]:
    """Every way toolkits.yaml or farm.yaml contradicts compat.yaml, each with its fix."""
    out = []
    for name, info in farm.platforms.items():
        if os_of(name) == "linux":
            if not _DIGEST.search(info.container):
                out.append(
                    f"farm.yaml: platforms.{name}.container {info.container!r} is not pinned by "
                    f"digest; run scripts/refresh_image_pins.py"
                )
            if unpinned(info.container) not in compat.images:
                out.append(
                    f"compat.yaml: images has no facts for {unpinned(info.container)!r} "
                    f"(farm.yaml {name}); add its Pythons and gcc-toolsets with their source"
                )
        elif info.runner not in compat.runners:
            out.append(
                f"compat.yaml: runners has no facts for {info.runner!r} (farm.yaml {name}); "
                f"add its Pythons and MSVC toolsets with their source"
            )
        if name not in table.redist_platforms:
            out.append(f"toolkits.yaml: redist_platforms has no entry for {name}")
    for tk in table.toolkits.values():
        out += _toolkit_problems(tk, table, compat, farm)
    return out


def _toolkit_problems(
    tk: Toolkit, table: ToolkitTable, compat: Compat, farm: FarmConfig
) -> list[str]:
    host = compat.host(tk.minor)
    if host is None:
        return [
            (
                f"compat.yaml: cuda has no host-compiler facts for {tk.minor} (toolkits.yaml "
                f"{tk.tag}); add them from that toolkit's include/crt/host_config.h"
            )
        ]
    out = []
    missing = set(compat.required.get(str(tk.version.major), ())) - set(table.components_for(tk))
    if missing:
        out.append(
            f"toolkits.yaml: {tk.tag} lacks {', '.join(sorted(missing))}, which CUDA "
            f"{tk.version.major} nvcc needs (compat.yaml); add them to components"
        )
    for name, info in farm.platforms.items():
        if os_of(name) == "linux":
            out += _gcc_problems(tk, host, name, compat.images.get(unpinned(info.container)))
        else:
            out += _msvc_problems(tk, host, info.runner, compat.runners.get(info.runner))
    return out


def _gcc_problems(
    tk: Toolkit, host: HostCompilers, platform: str, image: Image | None
) -> list[str]:
    if tk.gcc_toolset is None or image is None:
        return []
    if tk.gcc_toolset > host.gcc_max:
        return [
            (
                f"toolkits.yaml: {tk.tag} gcc_toolset {tk.gcc_toolset}: CUDA {tk.minor} accepts "
                f"gcc <= {host.gcc_max} (compat.yaml); use gcc-toolset-{host.gcc_max} or older"
            )
        ]
    if tk.gcc_toolset not in image.gcc_toolsets:
        return [
            (
                f"toolkits.yaml: {tk.tag} gcc_toolset {tk.gcc_toolset} is not in the {platform} "
                f"image (has {list(image.gcc_toolsets)}; compat.yaml)"
            )
        ]
    return []


def _msvc_problems(
    tk: Toolkit, host: HostCompilers, label: str, runner: Runner | None
) -> list[str]:
    if tk.msvc_toolset is None or runner is None:
        return []
    msc = runner.msvc.get(tk.msvc_toolset)
    if msc is None:
        return [
            (
                f"toolkits.yaml: {tk.tag} msvc_toolset {tk.msvc_toolset!r} is not on {label} "
                f"(has {', '.join(runner.msvc)}; compat.yaml)"
            )
        ]
    if not host.msvc[0] <= msc < host.msvc[1]:
        return [
            (
                f"toolkits.yaml: {tk.tag} msvc_toolset {tk.msvc_toolset!r} is MSVC "
                f"{msc // 100}.{msc % 100}; CUDA {tk.minor} accepts MSVC {_msc(host.msvc)} "
                f"(compat.yaml): pick a toolset in that range, or null"
            )
        ]
    return []


def support(matrix: Matrix) -> _Support:
    """The runners' abilities of a loaded matrix; ConfigError lists every contradiction."""
    table, compat = matrix.facts.toolkits, matrix.facts.compat
    problems = _problems(table, compat, matrix.farm)
    if problems:
        raise ConfigError(problems)
    return _Support(table, compat, matrix.farm)


def toolkit(root: FarmRoot, cuda: str, platform: str) -> dict[str, str]:
    """Install facts for one CUDA tag on one platform, as flat strings for the runner scripts."""
    table = load_facts(root).toolkits
    tk = table.get(cuda)
    windows = os_of(platform) == "windows"
    compiler = tk.msvc_toolset if windows else tk.gcc_toolset
    if compiler is None:
        kind = "msvc_toolset" if windows else "gcc_toolset"
        msg = (
            f"toolkits.yaml: {cuda} has no {kind}: no compiler on the {platform} runner accepts "
            f"CUDA {tk.minor}, so the planner never plans it there"
        )
        raise ConfigError([msg])
    return {
        "version": str(tk.version),
        "manifest": table.manifest_url(tk),
        "manifest_sha256": tk.manifest_sha256,
        "redist_platform": table.redist_platforms[platform],
        "components": " ".join(table.components_for(tk)),
        ("msvc_toolset" if windows else "gcc_toolset"): str(compiler),
    }


def gcc_max(root: FarmRoot, cuda: Version) -> int | None:
    """The newest gcc major a toolkit of this version accepts (None: no facts for it)."""
    host = load_facts(root).compat.host(f"{cuda.major}.{cuda.minor}")
    return None if host is None else host.gcc_max
