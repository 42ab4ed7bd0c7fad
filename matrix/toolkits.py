"""The CUDA toolkit table (toolkits.yaml): what the runner scripts install for a CUDA tag."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml
from packaging.version import Version

from wheelfarm.core.errors import ConfigError
from wheelfarm.core.root import FarmRoot


@cache
def _table(path: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")))


def toolkit(root: FarmRoot, cuda: str, platform: str) -> dict[str, str]:
    """Install facts for one CUDA tag on one platform, as flat strings for shell scripts."""
    table = _table(root.matrix / "toolkits.yaml")
    if cuda not in table["toolkits"]:
        known = ", ".join(table["toolkits"])
        msg = f"toolkits.yaml: no toolkit for {cuda!r} (have: {known}); add its full version"
        raise ConfigError([msg])
    version = Version(table["toolkits"][cuda])
    if platform == "win_amd64":
        mm = f"{version.major}.{version.minor}"
        win = table["windows"]
        return {
            "version": str(version),
            "installer": win["installer"].format(version=version),
            "components": " ".join(f"{c}_{mm}" for c in win["components"]),
        }
    mm = f"{version.major}-{version.minor}"
    linux = table["linux"]
    return {
        "version": str(version),
        "repo": linux["repo"].format(repo_arch=linux["repo_arch"][platform]),
        "packages": " ".join(f"{c}-{mm}" for c in linux["components"]),
        "cuda_home": f"/usr/local/cuda-{version.major}.{version.minor}",
        "gcc_toolset": str(_gcc_toolset(linux, version)),
    }


def _gcc_toolset(linux: dict[str, Any], version: Version) -> object:
    toolsets = linux["gcc_toolset"]
    if str(version.major) not in toolsets:
        msg = (
            f"toolkits.yaml: linux.gcc_toolset has no entry for CUDA {version.major} "
            f"(have: {', '.join(map(str, toolsets))}); add the newest gcc-toolset it accepts"
        )
        raise ConfigError([msg])
    return toolsets[str(version.major)]
