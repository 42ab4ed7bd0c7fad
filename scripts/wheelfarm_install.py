#!/usr/bin/env python3
"""Install a wheelfarm wheel that matches this machine: the torch (and its CUDA) already installed
in the target Python, that Python's version, and the platform. Standalone (standard library
only): copy it anywhere, or fetch it from a farm's site (`<site>/install.py`).

    python install.py flash-attn --index https://OWNER.github.io/REPO/
    python install.py causal-conv1d==1.7.0 --index URL --python .venv/bin/python --uv
    python install.py flash-attn --index URL --dry-run     # print the command only

It reads `<index>/packages.json`, picks the newest wheel of the package whose covered cells
include (CUDA, torch, Python, platform), and runs pip (or uv) against that (CUDA, torch) index.
Exit codes: 0 installed (or printed), 1 no matching wheel, 2 bad usage or no torch.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import urllib.request
from collections.abc import Sequence

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


def probe(python: str) -> dict[str, str | None]:
    out = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout))


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
    name, _, pin = args.requirement.partition("==")
    package, root = normalize(name), args.index.rstrip("/") + "/"

    found = probe(args.python)
    if not found["torch"] or not found["cuda"]:
        print(
            f"{args.python}: no CUDA build of torch is installed (torch={found['torch']}). Install "
            f"one first, e.g. pip install torch --index-url https://download.pytorch.org/whl/cu130",
            file=sys.stderr,
        )
        return 2
    major, minor = str(found["cuda"]).split(".")[:2]
    machine = {
        "cuda": f"cu{major}{minor}",
        "torch": ".".join(str(found["torch"]).split("+")[0].split(".")[:2]),
        "python": str(found["python"]),
        "platform": str(found["platform"]),
    }
    with urllib.request.urlopen(root + "packages.json", timeout=60) as response:  # noqa: S310
        wheels = json.load(response)["wheels"]
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
