#!/usr/bin/env python3
"""Install the wheelfarm wheel that matches this machine's torch, CUDA, Python, platform, GPU and
driver. Standard library only: copy it anywhere, or fetch it from a farm (`<site>/install.py`).

    python install.py flash-attn --index https://OWNER.github.io/REPO/
    python install.py causal-conv1d==1.7.0 --index URL --python .venv/bin/python --uv

It takes the newest fitting wheel of `<index>/packages.json` and runs pip (or uv) with the
installed torch pinned (docs/install.md says how and why). Exit codes: 0 installed (or printed),
1 no matching wheel, 2 bad usage or a --python without torch, 3 the index cannot be read, 4 the
wheel will not run on this GPU or driver; else pip's own. Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import re
import shlex
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from urllib.request import HTTPRedirectHandler

USAGE, UNREADABLE_INDEX, WILL_NOT_RUN = 2, 3, 4
MAX_INDEX_BYTES = 256 << 20  # packages.json of a 100,000-wheel farm is well under this
Run = Callable[..., "subprocess.CompletedProcess[str]"]  # subprocess.run or a test's fake
PROBE_SECONDS = 120  # importing torch can take a while on a cold disk
MAX_DETAIL = 120  # characters of a parser's complaint shown in a message
CELL = ("cuda", "torch", "python", "platform")  # what a wheel's `covers` must match
INDEX_SECONDS = 120.0  # --timeout's default: reading packages.json, however slowly it comes
_SHA256 = re.compile(r"[0-9a-f]{64}")
_WHEEL_NAME = re.compile(r"[A-Za-z0-9_.+!]+(-[A-Za-z0-9_.+!]+){4,5}\.whl")  # PEP 427's characters
# Each CUDA major's oldest driver (Linux, Windows), from matrix/drivers.yaml by wheelfarm.generate
DRIVER_FLOORS = {
    "11": ("450.80.02", "452.39"),
    "12": ("525.60.13", "527.41"),
    "13": ("580.65.06", "580.88"),
}
_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
# An arch as packages.json, verify and cuobjdump name it: sm_90, sm_90a, sm_120f (compute_90: sm_90)
ARCH = re.compile(r"(?:sm|compute)_([0-9]{2,3})([af]?)")
_VERSION = re.compile(
    r"v?(?:(?P<epoch>\d+)!)?(?P<release>\d+(?:\.\d+)*)"
    r"(?:[-_.]?(?P<pre>alpha|beta|preview|pre|a|b|c|rc)[-_.]?(?P<pre_n>\d*))?"
    r"(?:-(?P<post_implicit>\d+)|[-_.]?(?P<post>post|rev|r)[-_.]?(?P<post_n>\d*))?"
    r"(?:[-_.]?(?P<dev>dev)[-_.]?(?P<dev_n>\d*))?"
    r"(?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?",
    re.IGNORECASE,
)
_PRE_RANK = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
Wheel = dict[str, Any]  # one entry of packages.json's "wheels"
Cell = Mapping[str, "str | None"]  # CELL's values for a machine (None: it has no torch)

# The one probe of a target interpreter, this helper's and doctor's: it answers without torch too.
PROBE = r"""
import json, platform, sys, sysconfig
from importlib import metadata
out = {"python": "%d.%d" % sys.version_info[:2], "path": sys.path, "torch": None, "cuda": None,
       "platform": sysconfig.get_platform().replace("-", "_"), "glibc": platform.libc_ver()[1]}
try:
    import torch
    out.update(torch=torch.__version__, cuda=torch.version.cuda)
except Exception as exc:  # missing, or a broken install: doctor says which
    out["torch_error"] = repr(exc)[:300]
try:  # the distribution's version: PyPI's torch is 2.14.1 where __version__ says 2.14.1+cu130
    out["dist"] = metadata.version("torch")
except metadata.PackageNotFoundError:
    out["dist"] = out["torch"]
print(json.dumps(out))
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
    """PEP 440 sort key (1.0.dev1 < 1.0a1 < 1.0 < 1.0.post1 < 1.0+local, a label's numbers above
    its words), the order packaging.version.Version implements (a test compares them)."""
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        msg = f"{text!r} is not a PEP 440 version"
        raise ValueError(msg)
    release = tuple(int(p) for p in re.sub(r"(\.0+)+$", "", match["release"]).split("."))
    post = match["post_implicit"] or ((match["post_n"] or "0") if match["post"] else None)
    pre = ((_PRE_RANK[match["pre"].lower()], int(match["pre_n"] or 0)) if match["pre"]
           else (-1, 0) if post is None and match["dev"] else (3, 0))  # fmt: skip
    parts = re.split(r"[-_.]", match["local"] or "")
    local = tuple((1, int(p), "") if p.isdigit() else (0, 0, p.lower()) for p in parts if p)
    dev = (0, int(match["dev_n"] or 0)) if match["dev"] else (1, 0)
    return (int(match["epoch"] or 0), release, pre, int(post or -1), dev, local)


def numbers(version: str) -> tuple[int, ...]:
    """'580.65.06' -> (580, 65, 6): a driver (or glibc) version, compared number by number."""
    return tuple(int(n) for n in re.findall(r"\d+", version))


def is_loopback(host: str | None) -> bool:
    """localhost, or an address in 127.0.0.0/8 or ::1, read from the parsed host (never by
    prefix: `localhost.evil.example` and `127.0.0.1.evil.example` are other hosts)."""
    try:
        return (host or "").lower() == "localhost" or ipaddress.ip_address(host or "").is_loopback
    except ValueError:  # a name, not an address (or none)
        return False


def check_url(url: str, what: str, *, local: bool = True, code: int = USAGE) -> None:
    """https, http to loopback, or (when `local`) file: whoever can rewrite the index picks what
    runs here. Whitespace, quotes or a backslash are refused: a URL is printed into commands."""
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


def _redirect_handler() -> HTTPRedirectHandler:
    """A handler that follows a redirect only to https, or http on loopback."""
    import urllib.request  # noqa: PLC0415 - late: 2 MB of memory the index (it reads ARCH) spares

    class CheckedRedirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(
            self, req: urllib.request.Request, fp: object, code: int, msg: str, headers: object,
            newurl: str) -> urllib.request.Request | None:  # fmt: skip
            where = f"the redirect from {req.full_url} to"
            check_url(newurl, where, local=False, code=UNREADABLE_INDEX)
            return super().redirect_request(req, fp, code, msg, headers, newurl)  # type: ignore[arg-type]

    return CheckedRedirects()


def _fetch(url: str, timeout: float) -> bytes:
    """The body at `url` (at most MAX_INDEX_BYTES + 1 bytes) within `timeout` s: a daemon thread
    reads it, so a server sending a byte every few seconds cannot outlast it."""
    import urllib.request  # noqa: PLC0415 - see _redirect_handler

    got: list[bytes] = []
    failed: list[BaseException] = []

    def read() -> None:
        opener = urllib.request.build_opener(_redirect_handler())
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
        msg = f"cannot read {url} within --timeout {timeout:g}s (the server is too slow)"
        raise HelperError(msg + "; retry later or raise --timeout", UNREADABLE_INDEX)
    return got[0]


def ask(python: str, run: Run | None = None) -> dict[str, Any]:
    """PROBE's answer (its last line: a sitecustomize may print first) from `python`, torch or not:
    OSError or SubprocessError if it does not run, ValueError or TypeError for another answer."""
    argv, runner = [python, "-c", PROBE], run or subprocess.run
    done = runner(argv, capture_output=True, text=True, check=True, stdin=subprocess.DEVNULL,
                  timeout=PROBE_SECONDS)  # fmt: skip
    found = json.loads((done.stdout.strip().splitlines() or [""])[-1])
    if not isinstance(found, dict):
        raise TypeError(repr(found)[:MAX_DETAIL])
    return found


def reason(exc: BaseException) -> str:
    """Why a command or parse failed, in one short line: a process's last stderr line, else it."""
    text = str(getattr(exc, "stderr", None) or f"{type(exc).__name__}: {exc}").strip()
    text = text.splitlines()[-1] if text else type(exc).__name__
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."


def probe(python: str, run: Run | None = None) -> dict[str, str]:
    """The target interpreter's cell (CELL) and installed torch version (what a pin must name);
    a HelperError for one that does not run or has no CUDA build of torch."""
    fix = "give the path of a Python interpreter with torch installed, e.g. .venv/bin/python"
    try:
        found = ask(python, run)
        torch, cuda = found["torch"], found["cuda"]
        if torch is not None and cuda is not None:
            major, minor = str(cuda).split(".")[:2]
            torch_minor = ".".join(str(torch).split("+")[0].split(".")[:2])
            python_minor, platform, dist = (str(found[k]) for k in ("python", "platform", "dist"))
            return {"cuda": f"cu{major}{minor}", "torch": torch_minor, "python": python_minor,
                    "platform": platform, "torch_version": dist}  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:  # missing, not executable, failed
        msg = f"--python {python!r} does not run as Python ({reason(exc)}); {fix}"
        raise HelperError(msg, USAGE) from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # not our probe's answer
        msg = f"--python {python!r} did not answer like Python with torch ({exc!r}); {fix}"
        raise HelperError(msg, USAGE) from exc
    error = str(found.get("torch_error"))  # a broken torch is named, a missing one not
    broken = "" if error.startswith(("ModuleNotFoundError", "None")) else f": {error}"
    msg = f"{python}: no CUDA build of torch is installed (torch={torch}{broken}). Install one"
    msg += " first, e.g. pip install torch --index-url https://download.pytorch.org/whl/cu130"
    raise HelperError(msg, USAGE)


def read_index(root: str, timeout: float = INDEX_SECONDS) -> list[Wheel]:
    """The wheels listed in `<root>packages.json`, each checked to have what the helper reads."""
    import http.client  # noqa: PLC0415 - with urllib.request in _fetch

    url = root + "packages.json"
    try:
        body = _fetch(url, timeout)
    except (OSError, http.client.HTTPException, ValueError) as exc:  # URLError is an OSError
        why = getattr(exc, "reason", None) or exc
        msg = f"cannot read {url}: {why}; check --index (the farm's site root)"
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
    except (ValueError, KeyError, TypeError, RecursionError) as exc:  # json bounds its own depth
        msg = f"{url} is not a wheelfarm packages.json ({reason(exc)}); check --index"
        raise HelperError(msg, UNREADABLE_INDEX) from exc
    return list(wheels)


def wheel_archs(wheel: Wheel) -> tuple[set[str], set[str]] | None:
    """(SASS, PTX) archs packages.json lists for a wheel (an older index lists sm_90a code as
    'sm_90', read as plain); None when it lists none (older still); else a ValueError."""
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


def gpus(run: Run | None = None) -> list[tuple[tuple[int, int], str]]:
    """(compute capability, driver version) of every GPU nvidia-smi reports; none without it."""
    query = ["nvidia-smi", "--query-gpu=compute_cap,driver_version", "--format=csv,noheader"]
    try:
        out = (run or subprocess.run)(query, capture_output=True, text=True, check=True,
                                      stdin=subprocess.DEVNULL, timeout=30).stdout  # fmt: skip
        rows = [[field.strip() for field in line.split(",")] for line in out.splitlines()]
        caps = [(cap.split("."), driver) for cap, driver in filter(any, rows)]
        return [((int(major), int(minor)), driver) for (major, minor), driver in caps]
    except (OSError, subprocess.SubprocessError, ValueError):
        return []


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
    `cc`, the one rule doctor, verify, this helper and the site's arch text apply (NVIDIA's CUDA
    programming guide): plain cubin sm_XY on the same major, minor >= Y (sm_80 on 8.6); plain
    PTX on any capability >= X.Y (JIT); `a` (sm_90a, arch-specific) on X.Y only, its PTX too;
    `f` (CUDA 12.9+, family-specific) on the family's later minors (sm_120f: 12.0, 12.1)."""
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
    """Where `arch` runs: 'sm_120a: 12.0 only', 'sm_120f: 12.0-12.x', 'PTX sm_90: 9.0 and newer'."""
    major, minor, variant = arch_target(arch)
    where = " only" if variant == "a" else " and newer (JIT)" if ptx and not variant else ""
    return f"{'PTX ' * ptx}{arch}: {major}.{minor}" + (where or f"-{major}.x")


def runs_text(sass: Iterable[str], ptx: Iterable[str]) -> str:
    """Every arch of a wheel with where it runs, SASS then PTX, by capability."""
    order = sorted(sass, key=arch_target), sorted(ptx, key=arch_target)
    return ", ".join([*map(runs_where, order[0]), *(runs_where(a, ptx=True) for a in order[1])])


def choose(
    wheels: list[Wheel], package: str, pin: str | None, machine: Cell, *, nearest: bool = False
) -> Wheel | None:
    """The wheel of `package` (== `pin`) ranked first for `machine`: most of its cell shared, then
    newest (PEP 440); None unless all of it is, or with `nearest` (doctor's: its checks say why)."""

    def rank(w: Wheel) -> tuple[int, tuple[object, ...]]:
        agree = max(sum(c.get(k) == machine[k] for k in CELL) for c in w.get("covers") or [{}])
        return agree, version_key(str(w["version"]))

    best = max(pinned(wheels, package, pin), key=rank, default=None)
    return best if best is None or nearest or rank(best)[0] == len(CELL) else None


def pinned(wheels: list[Wheel], package: str, pin: str | None) -> list[Wheel]:
    field = "version" if pin and "+" in pin else "public_version"  # a full pin, or a public one
    return [w for w in wheels if normalize(str(w.get("name", ""))) == package
            and (pin is None or version_key(str(w[field])) == version_key(pin))]  # fmt: skip


def mismatch(wheels: list[Wheel], package: str, pin: str | None, machine: Cell) -> str:
    """The axes the index's nearest cell differs in, and the (CUDA, torch) pairs it has for the
    machine's Python and platform: what of their cell a user must change."""
    covers = [c for w in pinned(wheels, package, pin) for c in w["covers"]]
    if not covers:
        have = ", ".join(sorted({str(w["public_version"]) for w in pinned(wheels, package, None)}))
        return f"it has {package} {have} only" if have else f"it has no {package}"
    wrong = min(([k for k in CELL if c[k] != machine[k]] for c in covers), key=len)
    pairs = {f"{c['cuda']}/torch{c['torch']}" for c in covers if c["python"] == machine["python"]
             and c["platform"] == machine["platform"]}  # fmt: skip
    return (f"the mismatch is {' and '.join(wrong)}; for Python {machine['python']} on "
            f"{machine['platform']} it has {', '.join(sorted(pairs)) or 'none'}")  # fmt: skip


def checked(wheel: Wheel) -> Wheel:
    """The chosen wheel once each value put into a command has its shape (a sha256 of 64 lowercase
    hex digits; a version with the farm's label, its file name's); a HelperError naming it else."""
    name, sha, version = (str(wheel[k]) for k in ("filename", "sha256", "version"))
    fix = "the index is corrupt or not the farm's: rebuild it (wheelfarm index) or check --index"
    if not _WHEEL_NAME.fullmatch(name):  # it is printed: no escape sequence or line of its own
        msg = f"{name[:120]!a}: is not a wheel file name; {fix}"
        raise HelperError(msg, UNREADABLE_INDEX)
    if not _SHA256.fullmatch(sha):
        msg = f"{name}: sha256 {sha[:80]!r} is not 64 lowercase hex digits; {fix}"
        raise HelperError(msg, UNREADABLE_INDEX)
    named = name.split("-")[1]  # _WHEEL_NAME: 5 or 6 parts
    if "+" not in version or named != version:
        msg = (f"{name[:120]}: version {version[:80]!r} is not its file name's farm-labelled "
               f"version ({named!r}), so a pin on it could be met by PyPI; {fix}")  # fmt: skip
        raise HelperError(msg, UNREADABLE_INDEX)
    return wheel


def check_gpu(wheel: Wheel, machine: Cell, *, ignore: bool) -> None:
    """Refuse a wheel with no SASS or PTX for a GPU nvidia-smi reports, or a driver below its
    CUDA major's floor, unless `ignore`; say what could not be checked."""
    found, archs, why = gpus(), wheel_archs(wheel), []
    if not found:
        print("# no NVIDIA GPU found (nvidia-smi): GPU and driver not checked", file=sys.stderr)
    elif archs is None:
        print(f"# the index lists no archs for {wheel['filename']}: GPU not checked",
              file=sys.stderr)  # fmt: skip
    if archs is not None and any(archs):  # none listed: no device code (JIT), any GPU runs it
        why += [f"GPU {i} (compute capability {m}.{n}) has no SASS or PTX that runs on it (it "
                f"carries {runs_text(*archs)}); build it for {m}.{n}"
                for i, ((m, n), _) in enumerate(found) if not runs_any((m, n), *archs)]  # fmt: skip
    cuda = str(wheel.get("cuda") or machine["cuda"])[2:-1]
    if found and (floors := DRIVER_FLOORS.get(cuda)):
        floor, driver = floors[str(machine["platform"]).startswith("win")], found[0][1]
        if numbers(driver) < numbers(floor):
            why.append(f"driver {driver} is older than {floor}, the oldest that runs CUDA {cuda}.x "
                       "(NVIDIA's CUDA Compatibility); upgrade the NVIDIA driver")  # fmt: skip
    if why and not ignore:
        msg = f"{wheel['filename']} will not run here: {'; '.join(why)}; or pass --ignore-gpu"
        raise HelperError(msg, WILL_NOT_RUN)
    for each in why:
        print(f"# warning (--ignore-gpu): {each}", file=sys.stderr)


def parse_requirement(text: str) -> tuple[str, str | None]:
    """(normalized name, pinned version or None) of PACKAGE or PACKAGE==VERSION."""
    name, sep, pin = (part.strip() for part in text.partition("=="))
    if not _NAME.fullmatch(name) or (sep and not _VERSION.fullmatch(pin)):
        msg = f"{text!r} is not PACKAGE or PACKAGE==VERSION; give e.g. flash-attn==2.8.3"
        raise HelperError(msg, USAGE)
    return normalize(name), pin or None


def _seconds(text: str) -> float:
    """--timeout's value: a positive number of seconds."""
    with contextlib.suppress(ValueError):
        if 0 < (value := float(text)) < 10**7:
            return value
    msg = f"{text!r} is not a positive number of seconds"
    raise argparse.ArgumentTypeError(msg)


def main(argv: Sequence[str] | None = None) -> int:
    parser = Parser(description=__doc__.split("\n\n", 1)[0])
    add = parser.add_argument
    add("requirement", help="PACKAGE or PACKAGE==VERSION")
    add("--index", required=True, help="the farm's site root, e.g. https://o.github.io/r/")
    add("--python", default=sys.executable, help="target interpreter (default: this)")
    add("--uv", action="store_true", help="install with `uv pip` instead of pip")
    add("--timeout", type=_seconds, default=INDEX_SECONDS, metavar="SECONDS", help=f"give up "
        f"reading the index after this long in all (default {INDEX_SECONDS:g})")  # fmt: skip
    add("--dry-run", action="store_true", help="print the command, run nothing")
    add("--ignore-gpu", action="store_true", help="install even if the GPU or driver cannot run it")
    add("--print-requirement", nargs="?", const="url", choices=("url", "hash"), help="print "
        "NAME @ URL#sha256=... (url) or NAME==VERSION --hash=... (hash), not run pip")  # fmt: skip
    try:
        return install(parser.parse_args(argv))
    except HelperError as exc:
        print(f"install.py: error: {exc}", file=sys.stderr)
        return exc.code


def install(args: argparse.Namespace) -> int:
    """Read the index, probe the interpreter, pick and check the wheel, run (or print) pip."""
    package, pin = parse_requirement(args.requirement)
    check_url(args.index, "--index")
    root = args.index.rstrip("/") + "/"
    wheels = read_index(root, args.timeout)
    machine = probe(args.python)
    wheel = choose(wheels, package, pin, machine)
    cell = ", ".join(f"{k} {machine[k]}" for k in CELL)
    if wheel is None:
        print(f"no {package}{'==' + pin if pin else ''} wheel for {cell}: "
              f"{mismatch(wheels, package, pin, machine)}", file=sys.stderr)  # fmt: skip
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
    # uv: the farm's index named with --index, asked before PyPI (the printed commands' rule)
    command += ["--index" if args.uv else "--extra-index-url", index]
    print(shlex.join(command))
    return 0 if args.dry_run else subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
