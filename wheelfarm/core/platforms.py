"""The one platform registry: the farm platforms, their OS, and how wheel platform tags map onto
them. Every layer asks here instead of spelling the list again."""

from __future__ import annotations

import platform as host
import sys
from dataclasses import dataclass
from typing import Literal

OsName = Literal["linux", "windows"]


@dataclass(frozen=True)
class Platform:
    """A farm platform: its name (the planner's axis) and the OS whose tools repair its wheels."""

    name: str
    os: OsName
    machine: str


PLATFORMS: dict[str, Platform] = {
    p.name: p
    for p in (
        Platform("linux_x86_64", "linux", "x86_64"),
        Platform("linux_aarch64", "linux", "aarch64"),
        Platform("win_amd64", "windows", "amd64"),
    )
}
NAMES: tuple[str, ...] = tuple(PLATFORMS)


def os_of(name: str) -> OsName:
    """'linux' or 'windows' for a farm platform name."""
    return PLATFORMS[name].os


def platform_family(platform_tag: str) -> str | None:
    """The farm platform a wheel platform tag belongs to, None for a platform the farm never
    builds (macOS, 32-bit, any).

    >>> platform_family("manylinux_2_28_x86_64"), platform_family("win_amd64")
    ('linux_x86_64', 'win_amd64')
    >>> platform_family("macosx_14_0_arm64") is None
    True
    """
    if platform_tag == "win_amd64":
        return "win_amd64"
    for p in PLATFORMS.values():
        if p.os == "linux" and "linux" in platform_tag and platform_tag.endswith(p.machine):
            return p.name
    return None


def host_platform() -> str:
    """This machine as a farm platform name."""
    if sys.platform == "win32":
        return "win_amd64"
    machine = host.machine().lower()
    return f"linux_{'aarch64' if machine in ('aarch64', 'arm64') else 'x86_64'}"
