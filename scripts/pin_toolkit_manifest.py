#!/usr/bin/env python3
"""Propose a toolkits.yaml row's manifest pin: fetch NVIDIA's redistrib_<version>.json over
HTTPS, check that it is that release's manifest, and print (with --write: set) the row's
version and manifest_sha256. Every archive's sha256 comes from that manifest, so `wheelfarm
validate` refuses a row without its pin.

NVIDIA publishes no hash of the manifest itself: this is trust on first use over TLS. Compare
the sha256 with a second source before the change is merged (TensorFlow's hermetic CUDA table,
third_party/gpus/cuda/hermetic/cuda_redist_versions.bzl, or google-ml-infra/rules_ml_toolchain's
gpu/cuda/cuda_redist_versions.bzl). A new CUDA tag needs its row first (its gcc_toolset and
msvc_toolset, held to compat.yaml), with `manifest_sha256: null`; then run this.

Answers are data: the body is read with a size cap, parsed by core.jsonread, and its
release_label must be the version asked for; a failure is one line on stderr and toolkits.yaml
is left as it was.

Usage: python scripts/pin_toolkit_manifest.py cu132 13.2.0 [--toolkits FILE] [--write]
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

from wheelfarm.core import jsonread
from wheelfarm.core.errors import NetworkError, UsageError, WheelfarmError
from wheelfarm.core.http import Deadline, make_session, request
from wheelfarm.core.label import cuda_tag

TIMEOUT = 120.0  # seconds: one manifest of about 100 KB
MAX_MANIFEST = 8 << 20  # NVIDIA's manifests are 50-150 KB
VERSION = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}")


def row_pattern(tag: str) -> re.Pattern[str]:
    """The row of `tag` in toolkits.yaml's flow style, its version and manifest_sha256 apart."""
    return re.compile(
        rf'^(?P<lead>[ \t]+{re.escape(tag)}:[ \t]*\{{version:[ \t]*)"[^"]*"'
        r'(?P<mid>,[ \t]*manifest_sha256:[ \t]*)(?:null|"[^"]*")',
        re.MULTILINE,
    )


def pinned(text: str, tag: str, version: str, sha256: str) -> str:
    """`text` with `tag`'s row at `version` and `sha256`, every other byte as it was.

    >>> pinned('  cu1: {version: "1.0.0", manifest_sha256: null, x: 1}', "cu1", "1.0.1", "ab")
    '  cu1: {version: "1.0.1", manifest_sha256: "ab", x: 1}'
    """
    new, count = row_pattern(tag).subn(
        lambda m: f'{m["lead"]}"{version}"{m["mid"]}"{sha256}"', text, count=1
    )
    if count != 1:
        msg = (
            f'toolkits.yaml has no row for {tag}: add `{tag}: {{version: "{version}", '
            f'manifest_sha256: null, gcc_toolset: N, msvc_toolset: "14.NN"}}` (compilers from '
            f"compat.yaml), then run this again"
        )
        raise UsageError(msg)
    return new


def manifest_sha256(data: bytes, url: str, version: str) -> str:
    """The sha256 of `data`, once it is shown to be release `version`'s manifest."""
    try:
        found = jsonread.loads(data, what=url, max_bytes=MAX_MANIFEST)
    except ValueError as exc:
        msg = f"GET {url}: not a manifest ({exc})"
        raise NetworkError(msg) from exc
    label = found.get("release_label") if isinstance(found, dict) else None
    if label != version:
        msg = f"GET {url}: its release_label is {str(label)[:40]!r}, not {version!r}"
        raise NetworkError(msg)
    return hashlib.sha256(data).hexdigest()


def _tag(version: str) -> str | None:
    try:
        return cuda_tag(version)
    except ValueError:  # a minor past 9 has no tag
        return None


def propose(text: str, tag: str, version: str, fetch: Callable[[str], bytes]) -> tuple[str, str]:
    """(toolkits.yaml's text with the pin, the manifest's sha256)."""
    if not VERSION.fullmatch(version) or _tag(version) != tag:
        msg = f"{tag!r} {version!r}: give a CUDA tag and its full release, e.g. cu132 13.2.0"
        raise UsageError(msg)
    redist = yaml.safe_load(text).get("redist")
    if not isinstance(redist, str) or not redist.startswith("https://"):
        msg = "toolkits.yaml: `redist` is not an https:// URL"
        raise UsageError(msg)
    url = f"{redist}redistrib_{version}.json"
    sha = manifest_sha256(fetch(url), url, version)
    return pinned(text, tag, version, sha), sha


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = Path(__file__).parents[1] / "matrix" / "toolkits.yaml"
    parser.add_argument("tag", help="the CUDA tag, e.g. cu132")
    parser.add_argument("version", help="its full release, e.g. 13.2.0")
    parser.add_argument("--toolkits", type=Path, default=default, help="the toolkits.yaml")
    parser.add_argument("--write", action="store_true", help="write the pin into the file")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds for it all")
    args = parser.parse_args(argv)
    deadline = Deadline.after(args.timeout, what="--timeout")
    try:
        with make_session() as session:
            text, sha = propose(
                args.toolkits.read_text(encoding="utf-8"),
                args.tag,
                args.version,
                lambda url: (
                    request(session, "GET", url, max_bytes=MAX_MANIFEST, deadline=deadline).content
                ),
            )
    except (WheelfarmError, OSError) as exc:
        print(f"pin_toolkit_manifest: error: {exc}; {args.toolkits} is unchanged", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    print(f"{args.tag}: redistrib_{args.version}.json sha256 {sha} (trust on first use over TLS)")
    print("compare it with a second source (cuda_redist_versions.bzl) before merging")
    if args.write:
        args.toolkits.write_text(text, encoding="utf-8")
        print(f"wrote {args.toolkits}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
