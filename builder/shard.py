"""Split one long compile over several jobs, then link it warm (docs/adr/0011-split-compile.md).

A build predicted past GitHub's job limit runs as K compile shards and one link job:

- shard i of K runs the normal build with a `ninja` shim first on PATH. torch's cpp_extension
  runs `ninja -v -j N` in its build folder; the shim reads build.ninja, builds with the real ninja
  only the objects whose source (relative to the source root, the same on every machine) hashes
  to i, and writes an empty object file for every other output, so setuptools links and the build
  goes on. The objects it compiled stay in the compiler cache, which the job hands on; the wheel
  is a husk and is thrown away.
- the link job copies the shards' caches into its own and runs the whole build, which must hit
  the cache for at least MIN_HIT_RATE of its compiles, else it fails naming the objects that
  missed (from ccache's log).

Shard and link must hash the same compile commands, as every build does (ADR 16):
NVCC_THREADS (nvcc --threads) is the same on every machine, ccache hashes the compilers'
content (each job installs its toolkit afresh, so mtimes differ), and CCACHE_BASEDIR/NOHASHDIR
take the work folder out of the hash.

The shim reads build.ninja itself (parse_ninja) rather than asking the real ninja for
`-t compdb` (a statement's first input and output only) and `-t targets all`: on torch-written
files (xformers' 14 statements, and it grown to 200, 1000 and 5000 compiles; best of 20, two
runs) the reader took 0.7-1.0, 9-10, 52-58 and 304-327 ms, ninja's two runs 5.2-5.9, 13-18, 54-58
and 288-353 ms: slower for the sizes packages have, level only from a thousand (ADR 11).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from wheelfarm.builder.ccache import compile_results
from wheelfarm.builder.platforms import BuildPlatform, current
from wheelfarm.core import jsonread
from wheelfarm.core.errors import BuildError, UsageError
from wheelfarm.core.proc import Runner, call

logger = logging.getLogger(__name__)

MIN_HIT_RATE = 0.99  # the link build's ccache hits over its compiles
SHOWN = 20  # missed objects a failure names
SOURCE_SUFFIXES = frozenset({".c", ".cc", ".cpp", ".cxx", ".c++", ".cu", ".C"})
MANIFEST = "wheelfarm-shard.jsonl"  # what the shim built and stubbed, one line per ninja run
_HEX = re.compile(r"^[0-9a-f]$")


@dataclass(frozen=True)
class Split:
    """One part of a split build: compile shard `shard` of `count` (1-based), or, with
    `caches`, the link build that merges the shards' compiler caches."""

    shard: int | None = None
    count: int = 0
    caches: tuple[Path, ...] = ()

    @property
    def is_shard(self) -> bool:
        return self.shard is not None

    @classmethod
    def parse_shard(cls, text: str) -> Split:
        """'2/3' -> shard 2 of 3."""
        left, _, right = text.partition("/")
        if not (left.isdigit() and right.isdigit() and 1 <= int(left) <= int(right)):
            msg = f"--shard {text!r}: expected I/K with 1 <= I <= K, e.g. 1/3"
            raise UsageError(msg)
        return cls(shard=int(left), count=int(right))

    @classmethod
    def link(cls, caches: Sequence[Path]) -> Split:
        missing = [str(c) for c in caches if not c.is_dir()]
        if not caches or missing:
            msg = f"--link needs the shards' compiler cache folders; not folders: {missing}"
            raise UsageError(msg)
        return cls(caches=tuple(caches))


def owner(rel: str, count: int) -> int:
    """The shard (0-based) that compiles a source; a pure function of its relative path."""
    digest = hashlib.sha256(PurePosixPath(rel).as_posix().encode()).digest()
    return int.from_bytes(digest[:8], "big") % count


@dataclass(frozen=True)
class _Statement:
    """One ninja build statement: explicit outputs, rule, explicit inputs."""

    outputs: tuple[str, ...]
    rule: str
    inputs: tuple[str, ...]


def _split_unescaped(text: str) -> list[str]:
    """Split a ninja path list on unescaped spaces and unescape `$ `, `$:` and `$$`."""
    out, cur, i = [], [], 0
    while i < len(text):
        ch = text[i]
        if ch == "$" and i + 1 < len(text):
            cur.append(text[i + 1])
            i += 2
            continue
        if ch == " ":
            if cur:
                out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if cur:
        out.append("".join(cur))
    return out


def parse_ninja(text: str) -> list[_Statement]:
    """The build statements of a build.ninja (torch writes no include or subninja)."""
    text = re.sub(r"\$\n[ \t]*", "", text)  # line continuations
    statements = []
    for line in text.splitlines():
        if not line.startswith("build "):
            continue
        body = line[len("build ") :]
        colon = next(
            (i for i, ch in enumerate(body) if ch == ":" and (i == 0 or body[i - 1] != "$")), None
        )
        rest = _split_unescaped(body[colon + 1 :]) if colon is not None else []
        if not rest:
            continue  # no rule: not a statement ninja would accept either
        outs = _split_unescaped(body[:colon].split(" | ")[0])
        rule, inputs = rest[0], []
        for word in rest[1:]:
            if word in ("|", "||", "|@"):
                break
            inputs.append(word)
        statements.append(_Statement(tuple(outs), rule, tuple(inputs)))
    return statements


def source_of(st: _Statement, root: Path) -> str | None:
    """The source a compile statement compiles, relative to the source root; None when the
    statement is no single-source compile (a device link, a phony)."""
    if st.rule == "phony" or len(st.inputs) != 1:
        return None
    src = Path(st.inputs[0])
    if src.suffix not in SOURCE_SUFFIXES:
        return None
    try:
        return src.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return src.as_posix()


def select(
    statements: Iterable[_Statement], root: Path, shard: int, count: int
) -> tuple[list[_Statement], list[_Statement]]:
    """(built here, stubbed here): compiles whose source hashes to `shard` (1-based) are built;
    every other statement's outputs become empty objects."""
    mine: list[_Statement] = []
    stub: list[_Statement] = []
    for st in statements:
        if st.rule == "phony":
            continue
        rel = source_of(st, root)
        (mine if rel is not None and owner(rel, count) == shard - 1 else stub).append(st)
    return mine, stub


# ---------------------------------------------------------------- the shim (runs under ninja)


def _ninja_args(argv: list[str]) -> tuple[Path, list[str], list[str]] | None:
    """(build file, flags, targets) of a plain build invocation; None for anything else
    (--version, -t tool, -n), which goes to the real ninja untouched."""
    folder, file, flags, targets = Path(), "build.ninja", [], []
    it = iter(argv)
    for arg in it:
        if arg in ("-C", "-f", "-j", "-k", "-l", "-d", "-w"):
            value = next(it, "")
            if arg == "-C":
                folder = Path(value)
            elif arg == "-f":
                file = value
            else:
                flags += [arg, value]
        elif arg in ("-v", "--verbose", "--quiet") or arg.startswith(("-j", "-k", "-l")):
            flags.append(arg)
        elif arg.startswith("-"):
            return None
        else:
            targets.append(arg)
    if targets:
        return None
    return folder / file, flags, targets


def shim_main(argv: list[str], *, run: Runner = call, platform: BuildPlatform | None = None) -> int:
    """`ninja` for shard I of K (WHEELFARM_SHARD): build this shard's objects, stub the rest;
    another ninja command passes through to the real one (`platform`'s way, default this
    machine's)."""
    real = os.environ["WHEELFARM_REAL_NINJA"]
    parsed = _ninja_args(argv)
    if parsed is None:
        return (platform or current()).pass_through(real, argv)
    build_file, flags, _ = parsed
    shard, _, count = os.environ["WHEELFARM_SHARD"].partition("/")
    root = Path(os.environ["WHEELFARM_SHARD_ROOT"])
    folder = build_file.parent.resolve()
    statements = parse_ninja(build_file.read_text(encoding="utf-8"))
    mine, stub = select(statements, root, int(shard), int(count))
    outputs = [o for st in mine for o in st.outputs]
    if outputs:
        cmd = [real, "-C", str(folder), "-f", build_file.name, *flags, *outputs]
        try:
            run(cmd)
        except BuildError as exc:
            sys.stderr.write(f"wheelfarm shard {shard}/{count}: {exc}\n")
            return 1
    empty = Path(os.environ["WHEELFARM_EMPTY_OBJECT"])
    for st in stub:
        for out in st.outputs:
            path = folder / out
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(empty, path)
    entry = {
        "build_file": str(build_file.resolve()),
        "built": sorted(filter(None, (source_of(st, root) for st in mine))),
        "stubbed": sorted(o for st in stub for o in st.outputs),
    }
    with Path(os.environ["WHEELFARM_SHARD_MANIFEST"]).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")
    sys.stderr.write(
        f"wheelfarm shard {shard}/{count}: built {len(mine)} objects, stubbed {len(stub)}\n"
    )
    return 0


# ---------------------------------------------------------------- the builder's side


def merge_caches(caches: Iterable[Path], into: Path) -> int:
    """Copy the shards' ccache entries into one cache folder (entries are named by their hash,
    so copies never conflict); per-folder stats stay behind. Returns the files copied."""
    copied = 0
    for cache in caches:
        for top in (p for p in cache.iterdir() if p.is_dir() and _HEX.match(p.name)):
            for f in top.rglob("*"):
                if f.is_file() and f.name != "stats":
                    dest = into / f.relative_to(cache)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(f, dest)
                    copied += 1
    return copied


def prepare(env: dict[str, str], split: Split | None, *, src: Path, work: Path) -> dict[str, str]:
    """The compile env of a shard (the ninja shim leads PATH) or a link build (the shards'
    caches merged into CCACHE_DIR, ccache logging each compile); unchanged without a split."""
    if split is None:
        return env
    folder = work / "split"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if split.is_shard:
        here = current()
        real = shutil.which("ninja", path=env.get("PATH"))
        if real is None:
            msg = "a compile shard needs ninja on PATH (add ninja to build_requires)"
            raise BuildError(msg)
        return {
            **env,
            "PATH": os.pathsep.join([str(here.ninja_shim(folder / "bin")), env.get("PATH", "")]),
            "WHEELFARM_SHARD": f"{split.shard}/{split.count}",
            "WHEELFARM_SHARD_ROOT": str(src),
            "WHEELFARM_REAL_NINJA": real,
            "WHEELFARM_EMPTY_OBJECT": str(here.empty_object(env, folder)),
            "WHEELFARM_SHARD_MANIFEST": str(folder / MANIFEST),
            **here.husk_link(env),  # the husk links although its objects are empty
        }
    cache = Path(env["CCACHE_DIR"])
    cache.mkdir(parents=True, exist_ok=True)
    copied = merge_caches(split.caches, cache)
    logger.info(
        "merged %d cache files from %d shard caches into %s", copied, len(split.caches), cache
    )
    return {**env, "CCACHE_LOGFILE": str(folder / "ccache.log")}


def missed_objects(logfile: Path) -> list[str]:
    """The object files whose compile missed the cache, from a ccache log."""
    return [c.object for c in compile_results(logfile) if c.result == "cache_miss"]


def finish(split: Split | None, counts: dict[str, int], env: dict[str, str]) -> dict[str, object]:
    """After the compile: a shard reports what it built (and fails if ninja never ran); a link
    build fails below MIN_HIT_RATE, naming the objects that missed. Returns the summary."""
    if split is None:
        return {}
    if split.is_shard:
        manifest = Path(env["WHEELFARM_SHARD_MANIFEST"])
        if not manifest.is_file():
            msg = (
                "the build never ran ninja, so nothing was split: sharding needs a torch "
                "cpp_extension build with ninja in build_requires"
            )
            raise BuildError(msg)
        runs = [
            jsonread.loads(line, what=f"{manifest.name} line {i}")
            for i, line in enumerate(manifest.read_text(encoding="utf-8").splitlines(), 1)
        ]
        built = sum(len(r["built"]) for r in runs)
        stubbed = sum(len(r["stubbed"]) for r in runs)
        logger.info(
            "shard %s/%s: compiled %d objects, stubbed %d", split.shard, split.count, built, stubbed
        )
        return {"shard": f"{split.shard}/{split.count}", "built": built, "stubbed": stubbed}
    hits, misses = counts.get("hits", 0), counts.get("misses", 0)
    rate = hits / (hits + misses) if hits + misses else 0.0
    logger.info("link build: %d ccache hits, %d misses (%.1f%%)", hits, misses, 100 * rate)
    if rate < MIN_HIT_RATE:
        missed = missed_objects(Path(env["CCACHE_LOGFILE"]))
        shown = ", ".join(missed[:SHOWN]) + (
            f" and {len(missed) - SHOWN} more" if len(missed) > SHOWN else ""
        )
        msg = (
            f"link build hit the shards' caches for {hits} of {hits + misses} compiles "
            f"({100 * rate:.1f}% < {100 * MIN_HIT_RATE:.0f}%): a shard failed or its cache is "
            f"missing, or shard and link compiled differently; missed: {shown or 'unknown'}"
        )
        raise BuildError(msg)
    return {"hits": hits, "misses": misses, "hit_rate": round(rate, 4)}


def write_summary(out_dir: Path, build_id: str, summary: dict[str, object]) -> Path:
    """`<build id>.shard-IofK.json` in the wheelhouse: what a compile shard did (its product is
    the compiler cache, not a wheel)."""
    name = str(summary["shard"]).replace("/", "of")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{build_id}.shard-{name}.json"
    path.write_text(
        json.dumps({"build_id": build_id, **summary}, indent=2) + "\n", encoding="utf-8"
    )
    return path


def console() -> None:
    """The Windows launcher's entry point."""
    sys.exit(shim_main(sys.argv[1:]))


if __name__ == "__main__":
    console()
