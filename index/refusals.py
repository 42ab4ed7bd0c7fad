"""What the index refuses to list: the shapes every value of a wheel entry must have (its name,
URL, cells, archs, kernels and Requires-Python), each refusal a reason starting SHAPES, and the
escaping a name or reason gets before a page or terminal shows it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name

from wheelfarm.core.platforms import NAMES
from wheelfarm.index.entries import SAFE_NAME, Covered, Kernels, WheelEntry

MAX_FILENAME = 240  # files/NAME.metadata must fit a file system's 255-byte name
SHA256 = re.compile(r"[0-9a-f]{64}")
CUDA_TAG = re.compile(r"cu[0-9]{3}")
TORCH_MINOR = re.compile(r"[0-9]{1,2}\.[0-9]{1,3}")
PYTHON_MINOR = re.compile(r"3\.[0-9]{1,3}")
ARCH = re.compile(r"sm_[0-9]{2,3}[af]?")
# what a published URL may hold: printable ASCII, none of the characters that end an attribute,
# a command-line word or a quoted string
URL_CHARS = re.compile(r"[A-Za-z0-9._~:/?#\[\]@!$&()*+,;=%-]*")
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
SHAPES = "not listed (rebuild or republish it)"  # the head of every refusal reason
BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")  # embeddings, overrides and isolates


def visible(text: str) -> str:
    """`text` with each bidi control shown as its escape (U+202E would reorder what follows
    it on a page: a name or reason must read as it is stored)."""
    return BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


@dataclass(frozen=True, slots=True)
class Refused:
    """A wheel a source read and the index will not list: a value of it (its name, a URL, a
    digest, a cell, an arch) is of no shape the index serves. Reported, never written."""

    filename: str
    reason: str


def name_problem(filename: str, project: str | None) -> str | None:
    """Why a wheel file name (its project as parsed; None: it does not parse) cannot be a
    site's file and link, or None: printable ASCII (no bidi override shown raw), short enough
    for files/NAME.metadata, a wheel's, its project a plain normalized name."""
    if not (filename.isascii() and filename.isprintable()):
        return "a file name with characters other than printable ASCII"
    if len(filename) > MAX_FILENAME:
        return f"a file name over {MAX_FILENAME} characters"
    if project is None:
        return "a file name that is not a wheel's"
    if not SAFE_NAME.match(project):
        return "a project name that is not a plain normalized name"
    return None


def url_problem(url: str) -> str | None:
    """Why `url` cannot be a link on a page or in a pip command, or None: https, or plain http
    to this machine (tests), or "" (a local site's files/NAME)."""
    if not url:
        return None
    if not URL_CHARS.fullmatch(url):
        return "a URL with characters a link cannot carry"
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return "a URL that does not parse"
    if parts.scheme == "https" and host:
        return None
    if parts.scheme == "http" and host in LOOPBACK:
        return None
    return "a URL that is not https"


def refusal(e: WheelEntry) -> str | None:
    """Why the index will not list `e`, or None: each value a source gave (a build record, an
    API asset object, a site's own manifest) checked against its shape before it reaches a
    path, a page or a command."""
    problem = name_problem(e.filename, e.name) or url_problem(e.url)
    if problem is None and not SHA256.fullmatch(e.sha256):
        problem = "a sha256 that is not 64 lowercase hex digits"
    if (
        problem is None
        and e.metadata_sha256 is not None
        and not SHA256.fullmatch(e.metadata_sha256)
    ):
        problem = "a metadata sha256 that is not 64 lowercase hex digits"
    if problem is None:
        problem = _cells_problem(e.covers) or _archs_problem(e.sass + e.ptx)
    if problem is None and e.kernels is not None:
        problem = _kernels_problem(e.kernels)
    if problem is None and e.requires_python is not None:
        problem = _requires_problem(e.requires_python)
    return None if problem is None else f"{SHAPES}: {problem}"


@lru_cache(maxsize=1024)  # a few distinct values, repeated by every wheel
def _cells_problem(covers: tuple[Covered, ...]) -> str | None:
    for c in covers:
        if not CUDA_TAG.fullmatch(c.cuda):
            return "a CUDA tag not like 'cu130'"
        if not TORCH_MINOR.fullmatch(c.torch):
            return "a torch minor not like '2.14'"
        if not PYTHON_MINOR.fullmatch(c.python):
            return "a Python not like '3.12'"
        if c.platform not in NAMES:
            return f"a platform not one of {', '.join(NAMES)}"
    return None


KERNEL_TEXT = re.compile(r"[ -~]{1,200}")  # printable ASCII, as a page or a terminal shows it


def _kernels_problem(k: Kernels) -> str | None:
    """Why the kernel run a record gives cannot be shown, or None: its arch an arch's, its GPU,
    driver, date and failure printable ASCII of a line's length."""
    if not ARCH.fullmatch(k.sm):
        return "a kernel check's GPU arch not like 'sm_90'"
    texts = (k.gpu, k.driver, k.date, *((k.failure,) if k.failure else ()))
    if not all(KERNEL_TEXT.fullmatch(t) for t in texts):
        return "a kernel check's GPU, driver, date or failure that is not a line of printable ASCII"
    return None


def _archs_problem(archs: tuple[str, ...]) -> str | None:
    if all(ARCH.fullmatch(a) for a in archs):
        return None
    return "an arch not like 'sm_90', 'sm_90a' or 'sm_100f'"


@lru_cache(maxsize=1024)  # a few distinct values, repeated by every wheel
def _requires_problem(text: str) -> str | None:
    try:
        SpecifierSet(text)
    except InvalidSpecifier:
        return "a Requires-Python that is not a PEP 440 specifier"
    return None


def check_name(name: str) -> NormalizedName:
    """A project directory name that can neither break HTML nor leave the output folder."""
    normalized = canonicalize_name(name)
    if not SAFE_NAME.match(normalized):
        msg = f"unsafe project name {name!r}"
        raise ValueError(msg)
    return normalized
