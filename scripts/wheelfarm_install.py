#!/usr/bin/env python3
"""Install a wheelfarm wheel that matches this machine: the torch (and its CUDA) already installed
in the target Python, that Python's version, the platform, the GPU and the driver. Standalone
(standard library only): copy it anywhere, or fetch it from a farm's site (`<site>/install.py`).

    python install.py flash-attn --index https://OWNER.github.io/REPO/
    python install.py causal-conv1d==1.7.0 --index URL --python .venv/bin/python --uv
    python install.py flash-attn --index URL --dry-run     # print the command only
    python install.py flash-attn --index URL --print-requirement [url|hash]

It reads `<index>/packages.json`, picks the newest wheel (PEP 440 order) of the package whose
covered cells include (CUDA, torch, Python, platform), refuses it when `nvidia-smi` reports a GPU
it has no SASS or PTX for (the archs packages.json lists) or a driver too old for its CUDA
(`--ignore-gpu` installs it anyway), and runs pip (or uv) against that (CUDA, torch) index with
the installed torch pinned, so the installer cannot swap torch. `--print-requirement` prints a
hash-pinned requirement instead: `name @ URL#sha256=...` (url) or `name==VERSION --hash=sha256:...`
(hash, for a requirements file). Every pin names the full local version (`==2.8.3+cu130torch2.14`):
PyPI refuses local versions on upload, so only the farm's index can satisfy it, where a public
`==2.8.3` could be met by PyPI's build (or sdist) of the same number. The index must be https
(plain http only to a loopback address, redirects included) or file; packages.json is read with a
size cap and within `--timeout` seconds, and each value taken from it into a command is checked
first (a sha256 is 64 lowercase hex digits, a version carries the farm's label).
Exit codes: 0 installed (or printed), 1 no matching wheel, 2 bad usage, a --python that does not
run or has no torch, 3 the index cannot be read, 4 the wheel will not run on this GPU or driver;
else pip's own. Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import http.client
import ipaddress
import json
import re
import shlex
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from typing import NoReturn

USAGE, UNREADABLE_INDEX, WILL_NOT_RUN = 2, 3, 4
MAX_INDEX_BYTES = 256 << 20  # packages.json of a 100,000-wheel farm is well under this
PROBE_SECONDS = 120  # importing torch can take a while on a cold disk
MAX_DETAIL = 120  # characters of a parser's complaint shown in a message
CELL = ("cuda", "torch", "python", "platform")  # what a wheel's `covers` must match
INDEX_SECONDS = 120.0  # --timeout's default: reading packages.json, however slowly it comes
_SHA256 = re.compile(r"[0-9a-f]{64}")
# The oldest driver each CUDA major's runtime runs on (minor-version compatibility), (Linux,
# Windows). Source: NVIDIA, "CUDA Compatibility" (docs.nvidia.com/deploy/cuda-compatibility),
# table "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor Version Compatibility".
# The farm's matrix/drivers.yaml holds the same (a test keeps the two equal).
DRIVER_FLOORS = {
    "11": ("450.80.02", "452.39"),
    "12": ("525.60.13", "527.41"),
    "13": ("580.65.06", "580.88"),
}
_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
# An arch as packages.json, verify and cuobjdump name it: sm_90, sm_90a (arch-specific), sm_120f
# (family-specific); 'compute_90' is read as sm_90.
ARCH = re.compile(r"(?:sm|compute)_([0-9]{2,3})([af]?)")
_VERSION = re.compile(
    r"v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>alpha|beta|preview|pre|a|b|c|rc)[-_.]?(?P<pre_n>\d*))?"
    r"(?:-(?P<post_implicit>\d+)|[-_.]?(?P<post>post|rev|r)[-_.]?(?P<post_n>\d*))?"
    r"(?:[-_.]?(?P<dev>dev)[-_.]?(?P<dev_n>\d*))?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?",
    re.IGNORECASE,
)
Gpu = tuple[tuple[int, int], str]  # (compute capability, driver version)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}

PROBE = r"""
import json, sys, sysconfig
from importlib import metadata
try:
    import torch
except ImportError:
    torch = None
try:  # the installed distribution's version: PyPI's torch says 2.14.1 where __version__ says +cu130
    dist = metadata.version("torch")
except metadata.PackageNotFoundError:
    dist = None
print(json.dumps({
    "python": "%d.%d" % sys.version_info[:2],
    "platform": sysconfig.get_platform().replace("-", "_"),  # linux_x86_64, win_amd64, ...
    "torch": torch.__version__ if torch else None,
    "cuda": torch.version.cuda if torch else None,
    "dist": dist or (torch.__version__ if torch else None),
}))
"""


class HelperError(Exception):
    """A one-line message for stderr and the exit code that goes with it."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (no usage block), like every other error here."""

    def error(self, message: str) -> NoReturn:
        msg = f"{message}; see --help"
        raise HelperError(msg, USAGE)


def normalize(name: str) -> str:
    """PEP 503 name normalization."""
    return re.sub(r"[-_.]+", "-", name).lower()


def version_key(text: str) -> tuple[object, ...]:
    """PEP 440 sort key, so that 2.0rc1 < 2.0 < 2.0.post1 and a local label sorts above its
    public version (the ordering packaging.version.Version implements; a test compares them).
    A ValueError for what PEP 440 does not allow."""
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        msg = f"{text!r} is not a PEP 440 version"
        raise ValueError(msg)
    release = [int(p) for p in match["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:  # 1.0 == 1.0.0
        release.pop()
    post = match["post_implicit"] or ((match["post_n"] or "0") if match["post"] else None)
    if match["pre"]:
        pre = (_PRE_RANK[match["pre"].lower()], int(match["pre_n"] or 0))
    elif post is None and match["dev"]:
        pre = (-1, 0)  # 1.0.dev1 sorts before 1.0a1
    else:
        pre = (3, 0)  # a release after its pre-releases
    local = tuple(
        (1, int(p), "") if p.isdigit() else (0, 0, p.lower())  # numbers above words
        for p in re.split(r"[-_.]", match["local"] or "")
        if p
    )
    dev = (0, int(match["dev_n"] or 0)) if match["dev"] else (1, 0)
    return (int(match["epoch"] or 0), tuple(release), pre, int(post or -1), dev, local)


def is_loopback(host: str | None) -> bool:
    """localhost, or an address in 127.0.0.0/8 or ::1, read from the parsed host (never by
    prefix: `localhost.evil.example` and `127.0.0.1.evil.example` are other hosts)."""
    if host is None:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name, not an address
        return False


def check_url(url: str, what: str, *, local: bool = True, code: int = USAGE) -> None:
    """https, http to loopback, or (when `local`) file: whoever can rewrite the index picks
    what runs here. Whitespace or quotes in a URL are refused too: it is printed into
    requirements and commands."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
    except ValueError as exc:
        msg = f"{what} {url!r} is not a URL ({exc}); give https://HOST/PATH/"
        raise HelperError(msg, code) from exc
    if re.search(r"[\s\"'\\]", url):
        msg = f"{what} {url!r} holds whitespace, a quote or a backslash; give a plain URL"
        raise HelperError(msg, code)
    schemes = ("https", "file") if local else ("https",)
    if parts.scheme in schemes or (parts.scheme == "http" and is_loopback(host)):
        return
    local_fix = ", or file:// for a site on this machine" if local else ""
    msg = f"{what} {url!r} is not https; use https:// (plain http only to loopback){local_fix}"
    raise HelperError(msg, code)


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to where --index itself could point: https, or plain http to
    loopback (a plain-http redirect to another host is refused, not followed)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: object,
        code: int,
        msg: str,
        headers: object,
        newurl: str,
    ) -> urllib.request.Request | None:
        where = f"the redirect from {req.full_url} to"
        check_url(newurl, where, local=False, code=UNREADABLE_INDEX)
        return super().redirect_request(req, fp, code, msg, headers, newurl)  # type: ignore[arg-type]


def _fetch(url: str, timeout: float) -> bytes:
    """The body at `url`, at most MAX_INDEX_BYTES + 1 bytes, all of it within `timeout`
    seconds: the read runs in a daemon thread the helper stops waiting for (a server that
    sends a byte every few seconds never trips a per-read timeout)."""
    got: list[bytes] = []
    failed: list[BaseException] = []

    def read() -> None:
        opener = urllib.request.build_opener(_CheckedRedirects)
        try:
            with opener.open(url, timeout=min(timeout, 60)) as response:
                got.append(response.read(MAX_INDEX_BYTES + 1))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            failed.append(exc)

    worker = threading.Thread(target=read, name="read packages.json", daemon=True)
    worker.start()
    worker.join(timeout)
    if failed:
        raise failed[0]
    if not got:
        msg = (
            f"cannot read {url} within --timeout {timeout:g}s (the server is too slow); "
            f"retry later or raise --timeout"
        )
        raise HelperError(msg, UNREADABLE_INDEX)
    return got[0]


def probe(python: str) -> dict[str, str]:
    """The target interpreter's Python, platform, torch minor, installed torch version (what a
    pin must name) and CUDA."""
    fix = "give the path of a Python interpreter with torch installed, e.g. .venv/bin/python"
    try:
        out = subprocess.run(
            [python, "-c", PROBE],
            capture_output=True,
            text=True,
            check=True,
            stdin=subprocess.DEVNULL,
            timeout=PROBE_SECONDS,
        )
        found = json.loads(out.stdout)
        if found["torch"] is None or found["cuda"] is None:
            torch = found["torch"]
            msg = (
                f"{python}: no CUDA build of torch is installed (torch={torch}). Install one "
                f"first, e.g. pip install torch --index-url https://download.pytorch.org/whl/cu130"
            )
            raise HelperError(msg, USAGE)
        major, minor = str(found["cuda"]).split(".")[:2]
        return {
            "cuda": f"cu{major}{minor}",
            "torch": ".".join(str(found["torch"]).split("+")[0].split(".")[:2]),
            "python": str(found["python"]),
            "platform": str(found["platform"]),
            "torch_version": str(found["dist"]),
        }
    except (OSError, subprocess.SubprocessError) as exc:  # missing, not executable, failed
        detail = getattr(exc, "stderr", None) or exc
        last = str(detail).strip().splitlines()[-1:] or [type(exc).__name__]
        msg = f"--python {python!r} does not run as Python ({last[0]}); {fix}"
        raise HelperError(msg, USAGE) from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # not our probe's answer
        msg = f"--python {python!r} did not answer like Python with torch ({exc!r}); {fix}"
        raise HelperError(msg, USAGE) from exc


def read_index(root: str, timeout: float = INDEX_SECONDS) -> list[dict[str, object]]:
    """The wheels listed in `<root>packages.json`, each checked to have what the helper reads.
    JSON nested deeper than Python's recursion limit fails as one line: the standard library's
    json bounds its own depth there (the farm's jsonread module, which the helper cannot import,
    sets 64)."""
    url = root + "packages.json"
    try:
        body = _fetch(url, timeout)
    except (OSError, http.client.HTTPException, ValueError) as exc:  # URLError is an OSError
        reason = getattr(exc, "reason", None) or exc
        msg = f"cannot read {url}: {reason}; check --index (the farm's site root)"
        raise HelperError(msg, UNREADABLE_INDEX) from exc
    if len(body) > MAX_INDEX_BYTES:
        msg = f"{url} is larger than {MAX_INDEX_BYTES} bytes; is --index a wheelfarm site?"
        raise HelperError(msg, UNREADABLE_INDEX)
    try:
        wheels = json.loads(body)["wheels"]
        keys = ("name", "version", "public_version", "filename", "url", "sha256")
        for w in wheels:
            if not all(isinstance(w[k], str) for k in keys) or not all(
                isinstance(c[k], str) for c in w["covers"] for k in CELL
            ):
                raise TypeError(w)  # noqa: TRY301 - one message for every wrong shape
            version_key(w["version"])
            wheel_archs(w)
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        msg = f"{url} is not a wheelfarm packages.json ({_short(exc)}); check --index"
        raise HelperError(msg, UNREADABLE_INDEX) from exc
    return list(wheels)


def _short(exc: Exception) -> str:
    """The error, cut short: a garbled file is not echoed whole."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."


def wheel_archs(wheel: dict[str, object]) -> tuple[set[str], set[str]] | None:
    """(SASS, PTX) archs packages.json lists for a wheel ('sm_86', 'sm_120a'; an index written
    before suffixes were kept lists 'sm_90' for sm_90a code, read as plain); None when it lists
    none (an index written before archs were recorded). A ValueError for another shape."""
    archs = wheel.get("archs")
    if archs is None:
        return None
    if not isinstance(archs, dict):
        msg = f"archs of {wheel['filename']} is {archs!r}, not {{'sass': [...], 'ptx': [...]}}"
        raise ValueError(msg)  # noqa: TRY004 - read_index reports every bad shape as ValueError
    found: list[set[str]] = []
    for kind in ("sass", "ptx"):
        names = archs.get(kind, [])
        matches = [ARCH.fullmatch(n) if isinstance(n, str) else None for n in names or [None]]
        if not isinstance(names, list) or (names and None in matches):
            msg = f"archs.{kind} of {wheel['filename']} is {names!r}, not a list like ['sm_80']"
            raise ValueError(msg)
        found.append({f"sm_{m[1]}{m[2]}" for m in matches if m})
    return found[0], found[1]


def gpus() -> list[Gpu]:
    """(compute capability, driver version) of every GPU nvidia-smi reports; none without it."""
    query = ["--query-gpu=compute_cap,driver_version", "--format=csv,noheader"]
    try:
        lines = subprocess.run(
            ["nvidia-smi", *query], capture_output=True, text=True, check=True,
            stdin=subprocess.DEVNULL, timeout=30,
        ).stdout.splitlines()  # fmt: skip
        found = []
        for line in filter(str.strip, lines):
            cap, driver = (field.strip() for field in line.split(","))
            major, minor = cap.split(".")
            found.append(((int(major), int(minor)), driver))
    except (OSError, subprocess.SubprocessError, ValueError):
        return []
    return found


# Every compute capability NVIDIA has shipped a GPU with since Maxwell (NVIDIA, "CUDA GPU Compute
# Capability", developer.nvidia.com/cuda-gpus; 11.0 is Thor, 10.1 before CUDA 13): verify asks
# whether a wheel's code runs on each one its arch policy promises.
GPU_CAPABILITIES = (
    (5, 0), (5, 2), (5, 3), (6, 0), (6, 1), (6, 2), (7, 0), (7, 2), (7, 5), (8, 0), (8, 6),
    (8, 7), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1),
)  # fmt: skip


def arch_target(arch: str) -> tuple[int, int, str]:
    """'sm_120a' -> (12, 0, 'a'): the compute capability an arch is compiled for, and its
    variant ('' plain, 'a' arch-specific, 'f' family-specific). A ValueError for another name."""
    match = ARCH.fullmatch(arch)
    if match is None:
        msg = f"arch {arch!r} is not like 'sm_90', 'sm_90a' or 'sm_120f'"
        raise ValueError(msg)
    major, minor = divmod(int(match[1]), 10)
    return major, minor, match[2]


def runs_on(arch: str, cc: tuple[int, int], *, ptx: bool = False) -> bool:
    """Whether code for `arch` (SASS, or PTX when `ptx`) runs on a GPU of compute capability
    `cc`: the one rule doctor, verify, this helper and the site's arch text all apply.

    - plain cubin sm_XY: the same major, minor at or above Y (sm_80 runs on 8.6);
    - plain PTX: any capability at or above X.Y (the driver JIT-compiles it);
    - `a`, arch-specific (sm_90a, sm_100a, sm_120a): exactly X.Y, cubin or PTX (its PTX is not
      forward compatible);
    - `f`, family-specific (CUDA 12.9+; sm_100f, sm_120f): the family's later minors, cubin or
      PTX (sm_120f: 12.0 and 12.1; sm_100f: 10.0 and 10.3).
    Source: NVIDIA's CUDA programming guide ("architecture-specific" and "family-specific"
    feature sets) and "Blackwell and CUDA 12.9 introduce family-specific architecture features".

    >>> runs_on("sm_120", (12, 1)), runs_on("sm_120a", (12, 1)), runs_on("sm_120f", (12, 1))
    (True, False, True)
    >>> runs_on("sm_90", (12, 0), ptx=True), runs_on("sm_90a", (12, 0), ptx=True)
    (True, False)
    """
    major, minor, variant = arch_target(arch)
    if variant == "a":
        return cc == (major, minor)
    if ptx and not variant:
        return cc >= (major, minor)
    return cc[0] == major and cc[1] >= minor


def runs_any(cc: tuple[int, int], sass: Iterable[str], ptx: Iterable[str]) -> bool:
    """Whether any of a binary's (or wheel's) SASS or PTX runs on `cc`."""
    return any(runs_on(a, cc) for a in sass) or any(runs_on(a, cc, ptx=True) for a in ptx)


def runs_where(arch: str, *, ptx: bool = False) -> str:
    """Where `arch` runs, in words: 'sm_120a: 12.0 only', 'sm_80: 8.0-8.x', 'PTX sm_80: 8.0
    and newer'.

    >>> runs_where("sm_120a"), runs_where("sm_120f"), runs_where("sm_90", ptx=True)
    ('sm_120a: 12.0 only', 'sm_120f: 12.0-12.x', 'PTX sm_90: 9.0 and newer (JIT)')
    """
    major, minor, variant = arch_target(arch)
    name = f"PTX {arch}" if ptx else arch
    if variant == "a":
        return f"{name}: {major}.{minor} only"
    if ptx and not variant:
        return f"{name}: {major}.{minor} and newer (JIT)"
    return f"{name}: {major}.{minor}-{major}.x"


def runs_text(sass: Iterable[str], ptx: Iterable[str]) -> str:
    """Every arch of a wheel with where it runs, SASS then PTX, by capability."""
    order = sorted(sass, key=arch_target), sorted(ptx, key=arch_target)
    return ", ".join([*map(runs_where, order[0]), *(runs_where(a, ptx=True) for a in order[1])])


def _numbers(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def refusals(wheel: dict[str, object], machine: dict[str, str], found: list[Gpu]) -> list[str]:
    """Why `wheel` will not run on these GPUs and driver: no SASS or PTX for a GPU, or a driver
    below its CUDA major's floor. Empty when it will, or when there is nothing to compare."""
    reasons = []
    archs = wheel_archs(wheel)
    if archs is not None and any(archs):  # none listed: no device code (JIT), any GPU runs it
        sass, ptx = archs
        for i, (cc, _) in enumerate(found):
            if not runs_any(cc, sass, ptx):
                reasons.append(
                    f"GPU {i} (compute capability {cc[0]}.{cc[1]}) has no SASS or PTX that runs "
                    f"on it (it carries {runs_text(sass, ptx)}); build it for {cc[0]}.{cc[1]}"
                )
    cuda = str(wheel.get("cuda") or machine["cuda"])
    floors = DRIVER_FLOORS.get(cuda[2:-1])
    if found and floors:
        floor = floors[machine["platform"].startswith("win")]
        driver = found[0][1]
        if _numbers(driver) < _numbers(floor):
            reasons.append(
                f"driver {driver} is older than {floor}, the oldest that runs CUDA "
                f"{cuda[2:-1]}.x (NVIDIA's CUDA Compatibility); upgrade the NVIDIA driver"
            )
    return reasons


def choose(
    wheels: list[dict[str, object]], package: str, pin: str | None, machine: dict[str, str]
) -> dict[str, object] | None:
    """The newest wheel of `package` (== `pin` when given) that covers this machine's cell."""
    want = {k: machine[k] for k in CELL}
    field = "version" if pin and "+" in pin else "public_version"
    fits = [
        w
        for w in wheels
        if w["name"] == package
        and (pin is None or version_key(str(w[field])) == version_key(pin))
        and any({k: c[k] for k in want} == want for c in w["covers"])  # type: ignore[attr-defined]
    ]
    return max(fits, key=lambda w: version_key(str(w["version"])), default=None)


def checked(wheel: dict[str, object]) -> dict[str, object]:
    """The chosen wheel, once each value the helper puts into a command or a requirement has
    its shape: a sha256 of 64 lowercase hex digits (not `--hash=... --index-url ...`), and a
    version carrying the farm's label, equal to its file name's (a public `==2.8.3` could be met
    by PyPI). A HelperError naming the value otherwise: the index is corrupt or tampered with."""
    name, sha, version = (str(wheel[k]) for k in ("filename", "sha256", "version"))
    fix = "the index is corrupt or not the farm's: rebuild it (wheelfarm index) or check --index"
    if not _SHA256.fullmatch(sha):
        msg = f"{name}: sha256 {sha[:80]!r} is not 64 lowercase hex digits; {fix}"
        raise HelperError(msg, UNREADABLE_INDEX)
    parts = name.split("-")
    named = parts[1] if len(parts) in (5, 6) and name.endswith(".whl") else None
    if "+" not in version or named != version:
        msg = (
            f"{name[:120]}: version {version[:80]!r} is not its file name's farm-labelled "
            f"version ({named!r}), so a pin on it could be met by PyPI; {fix}"
        )
        raise HelperError(msg, UNREADABLE_INDEX)
    return wheel


def parse_requirement(text: str) -> tuple[str, str | None]:
    """(normalized name, pinned version or None) of PACKAGE or PACKAGE==VERSION."""
    name, sep, pin = (part.strip() for part in text.partition("=="))
    if not _NAME.fullmatch(name) or (sep and not _VERSION.fullmatch(pin)):
        msg = f"{text!r} is not PACKAGE or PACKAGE==VERSION; give e.g. flash-attn==2.8.3"
        raise HelperError(msg, USAGE)
    return normalize(name), pin or None


def _seconds(text: str) -> float:
    """--timeout's value: a positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < 10**7:
        msg = f"{text!r} is not a positive number of seconds"
        raise argparse.ArgumentTypeError(msg)
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = Parser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("requirement", help="PACKAGE or PACKAGE==VERSION")
    parser.add_argument(
        "--index", required=True, help="the farm's site root, e.g. https://o.github.io/r/"
    )
    parser.add_argument(
        "--python", default=sys.executable, help="target interpreter (default: this)"
    )
    parser.add_argument("--uv", action="store_true", help="install with `uv pip` instead of pip")
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=INDEX_SECONDS,
        metavar="SECONDS",
        help=f"give up reading the index after this long in all (default {INDEX_SECONDS:g})",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the command, run nothing")
    parser.add_argument(
        "--ignore-gpu",
        action="store_true",
        help="install even when the wheel lacks this GPU's arch or needs a newer driver",
    )
    parser.add_argument(
        "--print-requirement",
        nargs="?",
        const="url",
        choices=("url", "hash"),
        help="print a hash-pinned requirement (url: NAME @ URL#sha256=..., hash: NAME==VERSION "
        "--hash=sha256:... for a requirements file) instead of running pip",
    )
    try:
        return install(parser.parse_args(argv))
    except HelperError as exc:
        print(f"install.py: error: {exc}", file=sys.stderr)
        return exc.code


def install(args: argparse.Namespace) -> int:
    """Read the index, probe the interpreter, pick the wheel, check it against the GPU and
    driver, and run (or print) the installer or the requirement."""
    package, pin = parse_requirement(args.requirement)
    check_url(args.index, "--index")
    root = args.index.rstrip("/") + "/"
    wheels = read_index(root, args.timeout)
    machine = probe(args.python)
    wheel = choose(wheels, package, pin, machine)
    cell = ", ".join(f"{k} {machine[k]}" for k in CELL)
    if wheel is None:
        combos = sorted({(c["cuda"], c["torch"]) for w in wheels if w["name"] == package
                         for c in w["covers"]})  # type: ignore[attr-defined]  # fmt: skip
        have = ", ".join(f"{c}/torch{t}" for c, t in combos) or "none"
        print(f"no {package}{'==' + pin if pin else ''} wheel for {cell}; this index has "
              f"{package} for: {have}", file=sys.stderr)  # fmt: skip
        return 1
    checked(wheel)
    check_gpu(wheel, machine, ignore=args.ignore_gpu)
    index = f"{root}{machine['cuda']}/torch{machine['torch']}/"
    print(f"# {cell}: {wheel['filename']}", file=sys.stderr)
    if args.print_requirement:
        url = urllib.parse.urljoin(root, str(wheel["url"]))  # a local site's are relative
        check_url(url, f"the URL of {wheel['filename']}")
        if args.print_requirement == "url":
            print(f"{package} @ {url}#sha256={wheel['sha256']}")
        else:
            print(f"{package}=={wheel['version']} --hash=sha256:{wheel['sha256']}")
            print(f"# in a requirements file after: --extra-index-url {index}", file=sys.stderr)
        return 0
    command = (["uv", "pip", "install", "--python", args.python] if args.uv
               else [args.python, "-m", "pip", "install"])  # fmt: skip
    # torch pinned to the installed one: the resolver may not swap it for another build
    command += [f"{package}=={wheel['version']}", f"torch=={machine['torch_version']}"]
    command += ["--extra-index-url", index]
    print(shlex.join(command))
    if args.dry_run:
        return 0
    return subprocess.run(command, check=False).returncode


def check_gpu(wheel: dict[str, object], machine: dict[str, str], *, ignore: bool) -> None:
    """Refuse a wheel this machine's GPU or driver cannot run, unless told to go on; say what
    could not be checked."""
    found = gpus()
    if not found:
        print("# no NVIDIA GPU found (nvidia-smi): GPU and driver not checked", file=sys.stderr)
    elif wheel_archs(wheel) is None:
        print(f"# the index lists no archs for {wheel['filename']}: GPU not checked",
              file=sys.stderr)  # fmt: skip
    reasons = refusals(wheel, machine, found)
    if reasons and not ignore:
        msg = f"{wheel['filename']} will not run here: {'; '.join(reasons)}; or pass --ignore-gpu"
        raise HelperError(msg, WILL_NOT_RUN)
    for reason in reasons:
        print(f"# warning (--ignore-gpu): {reason}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
