#!/usr/bin/env python3
"""Install a wheelfarm wheel that matches this machine: the torch (and its CUDA) already installed
in the target Python, that Python's version, and the platform. Standalone (standard library
only): copy it anywhere, or fetch it from a farm's site (`<site>/install.py`).

    python install.py flash-attn --index https://OWNER.github.io/REPO/
    python install.py causal-conv1d==1.7.0 --index URL --python .venv/bin/python --uv
    python install.py flash-attn --index URL --dry-run     # print the command only

It reads `<index>/packages.json`, picks the newest wheel of the package whose covered cells
include (CUDA, torch, Python, platform), and runs pip (or uv) against that (CUDA, torch) index.
Exit codes: 0 installed (or printed), 1 no matching wheel, 2 bad usage, a --python that does not
run or has no torch, 3 the index cannot be read; else pip's own. Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import shlex
import subprocess
import sys
import urllib.request
from collections.abc import Sequence

USAGE, UNREADABLE_INDEX = 2, 3
MAX_INDEX_BYTES = 256 << 20  # packages.json of a 100,000-wheel farm is well under this
PROBE_SECONDS = 120  # importing torch can take a while on a cold disk
MAX_DETAIL = 120  # characters of a parser's complaint shown in a message

PROBE = r"""
import json, sys, sysconfig
try:
    import torch
except ImportError:
    torch = None
print(json.dumps({
    "python": "%d.%d" % sys.version_info[:2],
    "platform": sysconfig.get_platform().replace("-", "_"),  # linux_x86_64, win_amd64, ...
    "torch": torch.__version__ if torch else None,
    "cuda": torch.version.cuda if torch else None,
}))
"""


def normalize(name: str) -> str:
    """PEP 503 name normalization."""
    return re.sub(r"[-_.]+", "-", name).lower()


def version_key(version: str) -> tuple[object, ...]:
    """Sort key for the public part of simple versions like 2.8.3.post2 (newest last)."""
    public = version.split("+", 1)[0]
    parts: list[object] = []
    for piece in re.split(r"[.]", public):
        match = re.match(r"(\d+)(.*)", piece)
        parts.append((int(match[1]), match[2]) if match else (-1, piece))
    return tuple(parts)


class HelperError(Exception):
    """A one-line message for stderr and the exit code that goes with it."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def probe(python: str) -> dict[str, str]:
    """The target interpreter's Python, platform, torch and CUDA (all strings)."""
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
        }
    except (OSError, subprocess.SubprocessError) as exc:  # missing, not executable, failed
        detail = getattr(exc, "stderr", None) or exc
        last = str(detail).strip().splitlines()[-1:] or [type(exc).__name__]
        msg = f"--python {python!r} does not run as Python ({last[0]}); {fix}"
        raise HelperError(msg, USAGE) from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:  # not our probe's answer
        msg = f"--python {python!r} did not answer like Python with torch ({exc!r}); {fix}"
        raise HelperError(msg, USAGE) from exc


def read_index(root: str) -> list[dict[str, object]]:
    """The wheels listed in `<root>packages.json`, each checked to have what `choose` reads."""
    url = root + "packages.json"
    try:
        with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 - http(s) or file, the user's choice
            body = response.read(MAX_INDEX_BYTES + 1)
    except (OSError, http.client.HTTPException, ValueError) as exc:  # URLError is an OSError
        reason = getattr(exc, "reason", None) or exc
        msg = f"cannot read {url}: {reason}; check --index (the farm's site root)"
        raise HelperError(msg, UNREADABLE_INDEX) from exc
    if len(body) > MAX_INDEX_BYTES:
        msg = f"{url} is larger than {MAX_INDEX_BYTES} bytes; is --index a wheelfarm site?"
        raise HelperError(msg, UNREADABLE_INDEX)
    try:
        wheels = json.loads(body)["wheels"]
        keys = ("name", "version", "public_version", "filename")
        for w in wheels:
            if not all(isinstance(w[k], str) for k in keys) or not all(
                isinstance(c[k], str)
                for c in w["covers"]
                for k in ("cuda", "torch", "python", "platform")
            ):
                raise TypeError(w)  # noqa: TRY301 - one message for every wrong shape
    except (ValueError, KeyError, TypeError) as exc:
        msg = f"{url} is not a wheelfarm packages.json ({_short(exc)}); check --index"
        raise HelperError(msg, UNREADABLE_INDEX) from exc
    return list(wheels)


def _short(exc: Exception) -> str:
    """The error, cut short: a garbled file is not echoed whole."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."


def choose(
    wheels: list[dict[str, object]], package: str, pin: str | None, machine: dict[str, str]
) -> dict[str, object] | None:
    """The newest wheel of `package` (== `pin` when given) that covers this machine's cell."""
    want = {k: machine[k] for k in ("cuda", "torch", "python", "platform")}
    fits = [
        w
        for w in wheels
        if w["name"] == package
        and (pin is None or w["public_version"] == pin)
        and any({k: c[k] for k in want} == want for c in w["covers"])  # type: ignore[attr-defined]
    ]
    return max(fits, key=lambda w: version_key(str(w["version"])), default=None)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("requirement", help="PACKAGE or PACKAGE==VERSION")
    parser.add_argument(
        "--index", required=True, help="the farm's site root, e.g. https://o.github.io/r/"
    )
    parser.add_argument(
        "--python", default=sys.executable, help="target interpreter (default: this)"
    )
    parser.add_argument("--uv", action="store_true", help="install with `uv pip` instead of pip")
    parser.add_argument("--dry-run", action="store_true", help="print the command, run nothing")
    args = parser.parse_args(argv)
    try:
        return install(args)
    except HelperError as exc:
        print(f"install.py: error: {exc}", file=sys.stderr)
        return exc.code


def install(args: argparse.Namespace) -> int:
    """Read the index, probe the interpreter, pick the wheel, run (or print) the installer."""
    name, _, pin = args.requirement.partition("==")
    package, root = normalize(name), args.index.rstrip("/") + "/"
    wheels = read_index(root)
    machine = probe(args.python)
    wheel = choose(wheels, package, pin or None, machine)
    cell = ", ".join(f"{k} {v}" for k, v in machine.items())
    if wheel is None:
        combos = sorted({(c["cuda"], c["torch"]) for w in wheels if w["name"] == package
                         for c in w["covers"]})  # fmt: skip
        have = ", ".join(f"{c}/torch{t}" for c, t in combos) or "none"
        print(f"no {package}{'==' + pin if pin else ''} wheel for {cell}; this index has "
              f"{package} for: {have}", file=sys.stderr)  # fmt: skip
        return 1
    index = f"{root}{machine['cuda']}/torch{machine['torch']}/"
    spec = f"{package}=={wheel['version']}"
    command = (["uv", "pip", "install", "--python", args.python] if args.uv
               else [args.python, "-m", "pip", "install"])  # fmt: skip
    command += [spec, "--extra-index-url", index]
    print(f"# {cell}: {wheel['filename']}", file=sys.stderr)
    print(shlex.join(command))
    if args.dry_run:
        return 0
    return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
