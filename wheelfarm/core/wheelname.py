"""What a wheel file is, read from its name with packaging: its Python tag and the farm's build id.
Never parse wheel names by hand."""

from __future__ import annotations

from packaging.tags import Tag
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from wheelfarm.core.platforms import platform_family


def python_tag(tags: frozenset[Tag]) -> str:
    """The farm's Python tag of a wheel: 'cp312', 'cp310-abi3' for a limited-API build, or
    'py39-none' for one without any Python C API (matrix.model.python_tag writes the same).

    >>> [python_tag(parse_wheel_filename(f"x-1-{t}-win_amd64.whl")[3])
    ...  for t in ("cp312-cp312", "cp310-abi3", "py39-none")]
    ['cp312', 'cp310-abi3', 'py39-none']
    """
    tag = min(tags, key=str)
    return f"{tag.interpreter}-{tag.abi}" if tag.abi in ("abi3", "none") else tag.interpreter


def build_id_from_wheel(filename: str) -> str:
    """The planner's build id of a farm wheel, so existing wheels are skipped.

    >>> build_id_from_wheel("flash_attn-2.8.3+cu130torch2.14-cp312-cp312-manylinux_2_28_x86_64.whl")
    'flash-attn-2.8.3-cu130torch2.14-cp312-linux_x86_64'
    """
    name, version, _, tags = parse_wheel_filename(filename)
    return build_id(name, version, tags)


def build_id_or_none(filename: str) -> str | None:
    """build_id_from_wheel, or None for a file that is no wheel (a release's other assets, a
    stray file in a wheelhouse)."""
    if not filename.endswith(".whl"):
        return None
    try:
        return build_id_from_wheel(filename)
    except ValueError:
        return None


def build_id(name: str, version: Version, tags: frozenset[Tag]) -> str:
    """build_id_from_wheel for an already parsed file name."""
    platform = min(tags, key=str).platform
    label = version.local or "none"
    family = platform_family(platform) or platform
    return f"{name}-{version.public}-{label}-{python_tag(tags)}-{family}"
