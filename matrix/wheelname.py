"""What a wheel file is, read from its name with packaging: the farm's build id and platform."""

from __future__ import annotations

from packaging.tags import Tag
from packaging.utils import parse_wheel_filename
from packaging.version import Version


def platform_family(platform_tag: str) -> str:
    """Map a wheel platform tag to the farm's platform name.

    >>> platform_family("manylinux_2_28_x86_64"), platform_family("win_amd64")
    ('linux_x86_64', 'win_amd64')
    """
    if platform_tag == "win_amd64":
        return "win_amd64"
    for arch in ("x86_64", "aarch64"):
        if "linux" in platform_tag and platform_tag.endswith(arch):
            return f"linux_{arch}"
    return platform_tag


def build_id_from_wheel(filename: str) -> str:
    """The planner's build id of a farm wheel, so existing wheels are skipped.

    >>> build_id_from_wheel("flash_attn-2.8.3+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl")
    'flash-attn-2.8.3-cu130torch2.14-cp312-linux_x86_64'
    """
    name, version, _, tags = parse_wheel_filename(filename)
    return build_id(name, version, tags)


def build_id(name: str, version: Version, tags: frozenset[Tag]) -> str:
    """build_id_from_wheel for an already parsed file name."""
    tag = min(tags, key=str)
    py = f"{tag.interpreter}-abi3" if tag.abi == "abi3" else tag.interpreter
    label = version.local or "none"
    return f"{name}-{version.public}-{label}-{py}-{platform_family(tag.platform)}"
