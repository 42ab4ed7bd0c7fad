"""The CUDA toolkit table (toolkits.yaml): what the runner scripts install for a CUDA tag."""

from __future__ import annotations

from functools import cache
from typing import Any

import yaml
from packaging.version import Version

from wheelfarm.errors import ConfigError
from wheelfarm.matrix.load import MATRIX_DIR


@cache
def _table() -> dict[str, Any]:
    return dict(yaml.safe_load((MATRIX_DIR / "toolkits.yaml").read_text(encoding="utf-8")))


def toolkit(cuda: str, platform: str) -> dict[str, str]:
    """Install facts for one CUDA tag on one platform, as flat strings for shell scripts."""
    table = _table()
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
        "gcc_toolset": str(linux["gcc_toolset"][str(version.major)]),
    }


def pages_url(repository: str) -> str:
    """The GitHub Pages URL of OWNER/REPO (a fork's own, never upstream's).

    >>> pages_url("Octo/farm"), pages_url("octo/octo.github.io")
    ('https://octo.github.io/farm/', 'https://octo.github.io/')
    """
    owner, _, name = repository.partition("/")
    host = f"{owner.lower()}.github.io"
    return f"https://{host}/" if name.lower() == host else f"https://{host}/{name}/"
