"""Tests of what policy does (filed by module: tests/README.md)."""

from __future__ import annotations

from pathlib import Path

from tests.roots import REPO
from wheelfarm.builder.policy import library_policy


def test_pe_imports_are_read_from_a_real_windows_binary() -> None:
    """distlib's Windows launchers (the ones pip writes console scripts with): real PE32+ and
    PE32 files."""
    import distlib

    from wheelfarm.builder.binary import inspect_binary

    folder = Path(distlib.__file__).parent
    for exe in ("t64.exe", "t32.exe"):
        info = inspect_binary((folder / exe).read_bytes())
        assert "KERNEL32.dll" in info.needed
        assert not info.has_device_code
        policy = library_policy(REPO, "windows")
        assert all(policy.is_system(dll) for dll in info.needed)  # case-insensitive on Windows
    assert library_policy(REPO, "windows").is_provided("C10.DLL")
    assert not library_policy(REPO, "linux").is_provided("LIBC10.SO")


def test_libmvec_is_a_system_library_as_auditwheels_manylinux_2_28_policy_says() -> None:
    """glibc's vector math library, which gcc's -O3 -ffast-math calls (drtk's filter2d_ext):
    auditwheel's policy for the farm's floor tag leaves it unvendored, so verify must too."""
    import json

    import auditwheel

    policies = Path(auditwheel.__file__).parent / "policy" / "manylinux-policy.json"
    (floor,) = [p for p in json.loads(policies.read_text()) if p["name"] == "manylinux_2_28"]
    assert "libmvec.so.1" in floor["lib_whitelist"]
    assert library_policy(REPO, "linux").is_system("libmvec.so.1")
