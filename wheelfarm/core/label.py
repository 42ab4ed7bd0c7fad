"""The local version label `+cu130torch2.14` (docs/adr/0002-local-version-label.md): one
formatter, one parser, and the CUDA and torch version spellings they use."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from packaging.version import Version

_LABEL = re.compile(r"^(cu\d{3,})(?:torch(\d+\.\d+)(\.stable)?)?$", re.ASCII)  # 0-9 only


@lru_cache(maxsize=4096)  # Versions do not change: a plan parses the same few tags a million times
def parsed(text: str) -> Version:
    """`Version(text)`, parsed once: the grid's sort keys and lookups ask for its few torch,
    CUDA and Python versions over and over."""
    return Version(text)


@lru_cache(maxsize=4096)
def cuda_version(tag: str) -> Version:
    """CUDA tag to version.

    >>> str(cuda_version("cu130")), str(cuda_version("cu118"))
    ('13.0', '11.8')
    """
    digits = tag[2:]
    if not (tag.startswith("cu") and digits.isascii() and digits.isdigit() and len(tag) >= 5):  # noqa: PLR2004
        msg = f"invalid CUDA tag {tag!r}: expected 'cu' + major + minor digit, e.g. 'cu130'"
        raise ValueError(msg)
    return Version(f"{tag[2:-1]}.{tag[-1]}")


def cuda_tag(version: Version | str) -> str:
    """CUDA version to tag.

    >>> cuda_tag("13.0.88")
    'cu130'
    """
    v = Version(str(version))
    if v.minor > 9:  # noqa: PLR2004
        msg = f"CUDA {version} has no tag: 'cu' + major + one minor digit cannot say {v.minor}"
        raise ValueError(msg)
    return f"cu{v.major}{v.minor}"


@lru_cache(maxsize=4096)  # a plan asks for the same few versions a million times
def torch_minor(version: Version | str) -> str:
    """'2.14.1' -> '2.14': the torch axis of the grid (its C++ ABI changes every minor)."""
    v = parsed(str(version))
    return f"{v.major}.{v.minor}"


@dataclass(frozen=True, order=True)
class Label:
    """What a farm wheel's local version says: its CUDA, its torch minor (None for a torch-free
    wheel) and whether it is built on torch's stable ABI (then it serves every torch from it)."""

    cuda: str
    torch: str | None = None
    stable: bool = False

    def __str__(self) -> str:
        """The label as it appears after the '+'.

        >>> str(Label("cu130", "2.14")), str(Label("cu130")), str(Label("cu130", "2.10", True))
        ('cu130torch2.14', 'cu130', 'cu130torch2.10.stable')
        """
        if self.torch is None:
            return self.cuda
        return f"{self.cuda}torch{self.torch}" + (".stable" if self.stable else "")

    @classmethod
    def parse(cls, text: str) -> Label:
        """The inverse of str(); a label of another shape is a ValueError.

        >>> Label.parse("cu130torch2.10.stable")
        Label(cuda='cu130', torch='2.10', stable=True)
        """
        match = _LABEL.match(text)
        if match is None:
            msg = f"{text!r} is not a farm label (e.g. 'cu130torch2.14', 'cu130')"
            raise ValueError(msg)
        return cls(match[1], match[2], bool(match[3]))


# The shapes other public farms put after the '+': '+cu124torch24', '+cu124torch2.5gite2743ab',
# '+cu12torch2.8cxx11abiTRUE' (CUDA major only), '+pt27cu128'. One pattern; read after
# Label.parse, which owns the farm's own shape.
_OTHER = re.compile(
    r"^(?:pt(\d)(\d+))?cu(\d{2,})"
    r"(?:torch(\d)\.?(\d+)(?:git[0-9a-f]+)?(?:cxx11abi(true|false))?)?$",
    re.ASCII,
)


@dataclass(frozen=True)
class OtherLabel:
    """A label in another farm's shape: its CUDA ('cu124', or 'cu12' when it names only the
    major), its torch minor, and the C++ ABI it states (None when it states none)."""

    cuda: str
    torch: str | None = None
    cxx11abi: bool | None = None

    @property
    def cuda_major_only(self) -> bool:
        """'cu12' names a CUDA major: the wheel serves every 12.x torch ships."""
        return len(self.cuda) == 4  # noqa: PLR2004 - 'cu' + two digits

    @classmethod
    def parse(cls, text: str) -> OtherLabel:
        """A label of another farm's shape (lower case, as packaging normalizes it).

        >>> OtherLabel.parse("cu124torch24")
        OtherLabel(cuda='cu124', torch='2.4', cxx11abi=None)
        >>> OtherLabel.parse("pt27cu128")
        OtherLabel(cuda='cu128', torch='2.7', cxx11abi=None)
        >>> OtherLabel.parse("cu12torch2.8cxx11abitrue")
        OtherLabel(cuda='cu12', torch='2.8', cxx11abi=True)
        """
        match = _OTHER.match(text)
        if match is None or (match[1] and match[4]):
            msg = (
                f"{text!r} is of no label shape the index reads (e.g. 'cu130torch2.14', "
                f"'cu124torch24', 'pt27cu128', 'cu12torch2.8cxx11abiTRUE')"
            )
            raise ValueError(msg)
        major, minor = (match[1], match[2]) if match[1] else (match[4], match[5])
        torch = f"{major}.{int(minor)}" if major else None
        abi = None if match[6] is None else match[6] == "true"
        return cls(f"cu{match[3]}", torch, abi)
