"""`wheelfarm doctor`: say why a farm wheel will or will not run here.

A wheel of a torch CUDA extension runs only when seven things hold; each is checked with the
value found, the value needed and the one command that fixes it:

1. python: the wheel's Python tag fits the interpreter (abi3 or none: at or above its floor);
2. platform: the wheel's platform is this one, and its manylinux glibc floor is not above ours;
3. torch: the installed torch is the minor the wheel was built for (stable ABI: at or above);
4. cuda: torch's CUDA major is the wheel's;
5. gpu: the GPU's compute capability runs some of its SASS or PTX (the install helper's rule:
   `sm_120a` runs on 12.0 only, `sm_120f` on 12.0 and 12.1, PTX forward unless arch-specific);
6. driver: the driver is new enough for the wheel's CUDA major (minor-version compatibility);
7. import: the extension imports beside that torch; a failure is decoded into the demand above
   it that failed (undefined c10 symbols, a missing libcudart, GLIBC, the driver...).

The interpreter answers the install helper's probe (one program and one answer for both tools);
the GPU and driver come from NVML (nvidia-ml-py) when installed, else the helper's `nvidia-smi`
query; the driver floors from drivers.yaml. A wheel is read from its file, from the interpreter's
installed copy (its metadata, found on the interpreter's sys.path), or from a farm's packages.json
(`--index`: the wheel the helper's ranking puts first, its archs when listed; nothing downloaded;
read with a size cap and, over http, within the command's `--timeout`)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import zipfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.tags import Tag
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from wheelfarm.builder.binary import inspect_binary, is_binary
from wheelfarm.core import loadcheck, record
from wheelfarm.core.commands import install_commands
from wheelfarm.core.errors import SiteError, UsageError
from wheelfarm.core.http import Deadline, make_session, request
from wheelfarm.core.jsonread import loads
from wheelfarm.core.label import Label, cuda_tag, torch_minor
from wheelfarm.core.platforms import platform_family
from wheelfarm.core.root import FarmRoot
from wheelfarm.doctor_fix import Remedy
from wheelfarm.doctor_import import Check, Installed, failed, import_check, passed, top_modules
from wheelfarm.index.entries import NOT_RUN
from wheelfarm.index.sources import compiled_text
from wheelfarm.matrix.facts import load_facts
from wheelfarm.scripts.wheelfarm_install import (
    Run,
    arch_target,
    ask,
    choose,
    gpus,
    numbers,
    reason,
    runs_any,
    runs_text,
)

MAX_INDEX_BYTES = 256 << 20  # the install helper's cap: a 100,000-wheel packages.json is ~60 MB


@dataclass
class Env:
    """The target interpreter, its torch, and the GPU."""

    python: str
    platform: str  # farm platform name, or what sysconfig said
    glibc: tuple[int, int] | None
    torch: Version | None
    cuda: str | None
    gpu: tuple[int, int] | None = None
    driver: str | None = None
    torch_error: str | None = None
    path: tuple[str, ...] = ()  # its sys.path: where its installed distributions are read here


@dataclass
class WheelFacts:
    filename: str
    name: str
    label: Label | None
    tag: Tag
    version: str = ""  # its public version: a fix names the farm's wheel of another cell
    cubins: set[str] = field(default_factory=set)  # 'sm_90', 'sm_120a', ...
    ptx: set[str] = field(default_factory=set)
    archs_known: bool = True  # False: an index entry that lists no archs
    kernels: str = ""  # where its kernels ran once (build record, packages.json); "": unknown
    compiled: str = ""  # the compile and toolkit that built it (ADR 19); "": unknown

    def add(self, data: bytes) -> None:
        """Add the SASS and PTX of one shared object's fatbin."""
        info = inspect_binary(data)
        self.cubins |= info.cubins
        self.ptx |= info.ptx


def probe(python: str, *, run: Run | None = None) -> Env:
    """What the interpreter is and which torch it has (or why none imports), from the install
    helper's probe: doctor and install.py read one answer. `run` runs it (default
    subprocess.run)."""
    try:
        data = ask(python, run)
    except TypeError as exc:  # JSON, but not the probe's object
        msg = f"--python {python!r} answered the probe with {exc}"
        raise UsageError(msg) from exc
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        msg = f"--python {python!r} does not run as a Python interpreter ({reason(exc)})"
        raise UsageError(msg) from exc
    machine = str(data["platform"]).replace(".", "_")
    glibc = numbers(data["glibc"])[:2] if data.get("glibc") else None
    try:
        torch = Version(data["torch"]) if data.get("torch") else None
    except InvalidVersion:
        torch = None
    return Env(
        python=data["python"],
        platform=platform_family(machine) or machine,
        glibc=(glibc[0], glibc[1]) if glibc and len(glibc) == 2 else None,  # noqa: PLR2004
        torch=torch,
        cuda=data.get("cuda"),
        torch_error=data.get("torch_error"),
        path=tuple(str(p) for p in data.get("path") or ()),
    )


def gpu_and_driver(*, run: Run | None = None) -> tuple[tuple[int, int] | None, str | None]:
    """(compute capability, driver version) of GPU 0: NVML when installed, else the install
    helper's nvidia-smi query (one query for both tools)."""
    try:
        import pynvml  # type: ignore[import-not-found]  # noqa: PLC0415 - optional

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
        driver = pynvml.nvmlSystemGetDriverVersion()
        return (int(major), int(minor)), str(driver)
    except Exception:  # noqa: BLE001, S110 - no NVML, no GPU or no driver: ask nvidia-smi
        pass
    found = gpus(run)
    return found[0] if found else (None, None)


def read_wheel(path: Path) -> WheelFacts:
    """Name, label, tag and the archs of every binary's fatbin."""
    try:
        name, version, _, tags = parse_wheel_filename(path.name)
        facts = WheelFacts(
            path.name, name, _label(version.local), min(tags, key=str), version.public
        )
        with zipfile.ZipFile(path) as zf:
            for member in zf.namelist():
                if is_binary(member):
                    facts.add(zf.read(member))
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        msg = f"{str(path)!r} is not a readable wheel: {exc}"
        raise UsageError(msg) from exc
    return facts


def _label(local: str | None) -> Label | None:
    try:
        return Label.parse(local or "")
    except ValueError:
        return None


def _python(w: WheelFacts, env: Env, fix: Remedy) -> Check:
    interp = w.tag.interpreter
    want = f"{interp[2]}.{interp[3:]}" if len(interp) > 3 else interp[2:]  # noqa: PLR2004
    if w.tag.abi in ("abi3", "none"):  # a limited-API build, or no Python C API at all
        ok = Version(env.python) >= Version(want)
        needed = f"{'CPython' if w.tag.abi == 'abi3' else 'Python'} >= {want} ({w.tag.abi})"
    else:
        ok = env.python == want
        needed = f"CPython {want}"
    return Check("python", ok, f"CPython {env.python}", needed, _other(ok, w, env, fix))


def _other(ok: bool, w: WheelFacts, env: Env, fix: Remedy) -> str:  # noqa: FBT001
    """No fix where the check passed, else the farm's wheel of the interpreter's own cell."""
    return "" if ok else fix.wheel(w.name, w.version, cell(env))


def _platform(w: WheelFacts, env: Env, fix: Remedy) -> Check:
    family = platform_family(w.tag.platform) or w.tag.platform
    floor = re.match(r"manylinux_(\d+)_(\d+)_", w.tag.platform)
    needed = family + (f", glibc >= {floor[1]}.{floor[2]}" if floor else "")
    found = env.platform + (f", glibc {env.glibc[0]}.{env.glibc[1]}" if env.glibc else "")
    ok = family == env.platform
    if ok and floor and env.glibc is not None:
        ok = env.glibc >= (int(floor[1]), int(floor[2]))
    return Check("platform", ok, found, needed, _other(ok, w, env, fix))


def _torch(w: WheelFacts, env: Env, fix: Remedy) -> Check:
    if w.label is None or w.label.torch is None:
        return passed("torch", str(env.torch), "any torch (a torch-free wheel)")
    built = w.label.torch
    if env.torch is None:
        return failed("torch", f"no torch ({env.torch_error or 'not installed'})",
                     f"torch {built}", fix.torch(built, w.label.cuda))  # fmt: skip
    have = Version(f"{env.torch.major}.{env.torch.minor}")
    ok = have >= Version(built) if w.label.stable else have == Version(built)
    needed = f"torch >= {built} (stable ABI)" if w.label.stable else f"torch {built}.x"
    fixes = "" if ok else f"{_other(ok, w, env, fix)}\n{fix.torch(built, w.label.cuda)}".strip()
    return Check("torch", ok, f"torch {env.torch}", needed, fixes)


def _cuda(w: WheelFacts, env: Env, fix: Remedy) -> Check:
    if w.label is None:
        return failed("cuda", str(env.cuda), "a farm label (+cuXYZ...)",
                      "this is not a farm wheel: its CUDA is unknown")  # fmt: skip
    major = w.label.cuda[2:-1]
    if env.torch is None:
        return failed("cuda", "no torch", f"CUDA {major}.x", "see the torch check")
    minor = torch_minor(env.torch)
    if env.cuda is None:  # torch.version.cuda is None: a CPU build
        return failed("cuda", f"torch {env.torch}: a CPU build (no CUDA)", f"CUDA {major}.x",
                      fix.torch(minor, w.label.cuda))  # fmt: skip
    ok = env.cuda.split(".", maxsplit=1)[0] == major
    fixes = "" if ok else f"{_other(ok, w, env, fix)}\n{fix.torch(minor, w.label.cuda)}".strip()
    # any minor of the major loads it: one compile serves them (ADR 19), which it names
    needed = f"CUDA {major}.x" + (f" (built by {w.compiled})" if w.compiled else "")
    return Check("cuda", ok, f"torch's CUDA {env.cuda}", needed, fixes)


def _gpu(w: WheelFacts, env: Env) -> Check:
    needed = f"a GPU these run on: {runs_text(w.cubins, w.ptx) or 'no device code found'}"
    needed += f" ({w.kernels})" if w.kernels else ""
    if env.gpu is None:
        return failed("gpu", "no NVIDIA GPU found (NVML, nvidia-smi)", needed,
                     "run on the machine with the GPU")  # fmt: skip
    cc = f"{env.gpu[0]}.{env.gpu[1]}"
    if not w.archs_known:
        return failed("gpu", f"compute capability {cc}", "archs the index does not list",
                      f"download {w.filename} and run: wheelfarm doctor {w.filename}")  # fmt: skip
    if not (w.cubins or w.ptx):  # no device code: it compiles its kernels at run time (pycuda)
        return Check(
            "gpu", ok=True, found=f"compute capability {cc}", needed="any GPU (no device code)"
        )
    ok = runs_any(env.gpu, w.cubins, w.ptx)
    fix = "" if ok else (
        f"the farm's {w.name} wheel carries no code for {cc}; a build that does needs nvcc and a "
        f"farm checkout: wheelfarm build --local --package {w.name} --archs {cc}"
    )  # fmt: skip
    return Check("gpu", ok, f"compute capability {cc}", needed, fix)


def _driver(w: WheelFacts, env: Env, root: FarmRoot) -> Check:
    major = w.label.cuda[2:-1] if w.label else None
    floors = load_facts(root).drivers.get(major) if major else None
    floor = floors[env.platform == "win_amd64"] if floors else None
    needed = f"driver >= {floor} (CUDA {major}.x)" if floor else f"a driver for CUDA {major}.x"
    if env.driver is None:
        return failed("driver", "no NVIDIA driver found", needed,
                     f"install an NVIDIA driver >= {floor}")  # fmt: skip
    ok = floor is not None and numbers(env.driver) >= numbers(floor)
    return Check("driver", ok, f"driver {env.driver}", needed,
                 "" if ok else f"upgrade the NVIDIA driver to {floor} or newer")  # fmt: skip


def diagnose(
    wheel: Path,
    python: str,
    root: FarmRoot,
    *,
    gpu: bool = True,
    site: str | None = None,
    run: Run | None = None,
) -> list[Check]:
    """The seven checks of a wheel file against an interpreter and this machine's GPU; `site`,
    the farm's, is where a fix finds the wheel of another cell."""
    facts = read_wheel(wheel)
    facts.kernels, facts.compiled = recorded_facts(wheel)
    env = probe(python, run=run)
    if gpu:
        env.gpu, env.driver = gpu_and_driver(run=run)
    checks = _checks(facts, env, root, Remedy(root, python, site))
    return [*checks, import_check(python, wheel, top_modules(wheel), run=run)]


def installed(python: str, env: Env, name: str) -> tuple[WheelFacts, list[str], Installed]:
    """What the interpreter has installed of `name` (its label, tag and binaries' archs), its
    top-level packages and the extension modules its RECORD lists, read here from the metadata
    on the interpreter's sys.path (`env.path`)."""
    dist = next(iter(metadata.distributions(name=name, path=list(env.path))), None)
    if dist is None:
        msg = f"{name!r} is not installed in {python}; pass a wheel file, or install it first"
        raise UsageError(msg)
    wheel = (dist.read_text("WHEEL") or "").splitlines()
    tag = next((line.split(":", 1)[1].strip() for line in wheel if line.startswith("Tag:")), None)
    try:
        version = Version(dist.version)
        interp, abi, plat = str(tag).split("-")
    except (InvalidVersion, ValueError, TypeError) as exc:
        msg = f"{name} {dist.version!r} was not installed from a wheel ({exc})"
        raise UsageError(msg) from exc
    facts = WheelFacts(f"{name}-{version}", name, _label(version.local), Tag(interp, abi, plat),
                       version.public)  # fmt: skip
    files = dist.files or []
    for f in files:
        if f.suffix in (".so", ".pyd") or ".so." in f.name:
            with contextlib.suppress(OSError, ValueError):  # an unreadable file carries no archs
                facts.add(Path(str(dist.locate_file(f))).read_bytes())
    tops = {f.parts[0] for f in files if len(f.parts) > 1}  # not '..' (scripts), nor *.dist-info
    members = loadcheck.extension_members([f.as_posix() for f in files])
    binaries = Installed(str(dist.locate_file("")), tuple(members))
    return facts, sorted(t for t in tops if t.isidentifier() and t != "__pycache__"), binaries


def _checks(facts: WheelFacts, env: Env, root: FarmRoot, fix: Remedy) -> list[Check]:
    return [_python(facts, env, fix), _platform(facts, env, fix), _torch(facts, env, fix),
            _cuda(facts, env, fix), _gpu(facts, env), _driver(facts, env, root)]  # fmt: skip


def diagnose_installed(
    name: str, python: str, root: FarmRoot, *, site: str | None = None, run: Run | None = None
) -> list[Check]:
    """The seven checks of an installed package in its interpreter: its modules imported, then
    every binary its RECORD lists loaded in a child of its own."""
    env = probe(python, run=run)
    facts, modules, binaries = installed(python, env, name)
    env.gpu, env.driver = gpu_and_driver(run=run)
    loaded = import_check(python, None, modules, installed=binaries, run=run)
    return [*_checks(facts, env, root, Remedy(root, python, site)), loaded]


def diagnose_index(
    name: str,
    index: str,
    python: str,
    root: FarmRoot,
    *,
    deadline: Deadline | None = None,
    run: Run | None = None,
) -> list[Check]:
    """The seven checks of the wheel a farm's index offers this interpreter, from its
    packages.json alone (nothing downloaded): it is not installed, so import fails with the
    command that installs it. `deadline` bounds reading packages.json from a server."""
    env = probe(python, run=run)
    env.gpu, env.driver = gpu_and_driver(run=run)
    base = index.rstrip("/") + "/"
    entry = _pick(_index_wheels(base, deadline), canonicalize_name(name), env, base)
    try:
        facts = _entry_facts(entry)
    except (KeyError, TypeError, ValueError) as exc:
        msg = (
            f"{base}packages.json: the entry {str(entry.get('filename'))!r} is unreadable ({exc!r})"
        )
        raise SiteError(msg) from exc
    site = base if "://" in base else Path(base).resolve().as_uri() + "/"
    remedy = Remedy(root, python, site)
    covers = entry.get("covers") or [{}]
    here = next((c for c in covers if c == cell(env)), covers[0])
    index = f"{site}{here.get('cuda')}/torch{here.get('torch')}/"
    grid = remedy.grid()
    torch = (
        grid[0].torch_index(facts.label.cuda)
        if grid and facts.label and facts.label.torch
        else None
    )
    fix = install_commands(facts.name, str(entry["version"]), index, torch, python=python).pip
    return [
        *_checks(facts, env, root, remedy),
        failed("import", "not installed", "import succeeds", fix),
    ]


def _index_wheels(base: str, deadline: Deadline | None) -> list[dict[str, Any]]:
    """The wheels of `<base>packages.json` (a URL, or a site folder on this machine), at most
    MAX_INDEX_BYTES of it: a server's body is capped and bounded by `deadline` (core.http), a
    file's size is checked before it is read."""
    url = base + "packages.json"
    try:
        if "://" in url:
            body = request(
                make_session(), "GET", url, max_bytes=MAX_INDEX_BYTES, deadline=deadline
            ).content
        elif Path(url).stat().st_size > MAX_INDEX_BYTES:
            msg = f"larger than {MAX_INDEX_BYTES:,} bytes"
            raise ValueError(msg)  # noqa: TRY301 - reported with every other unreadable index
        else:
            body = Path(url).read_bytes()
        wheels = loads(body, what=url, max_bytes=MAX_INDEX_BYTES)["wheels"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        msg = f"--index {base!r}: cannot read a wheelfarm packages.json ({exc!r}); give a site root"
        raise SiteError(msg) from exc
    if not isinstance(wheels, list) or not all(isinstance(w, dict) for w in wheels):
        msg = f"{url}: 'wheels' is not a list of wheel entries; give a wheelfarm site root"
        raise SiteError(msg)
    return wheels


def cell(env: Env) -> dict[str, str | None]:
    """The interpreter's (CUDA, torch, Python, platform), as packages.json's `covers` name them."""
    return {
        "cuda": cuda_tag(env.cuda) if env.cuda else None,
        "torch": torch_minor(env.torch) if env.torch else None,
        "python": env.python,
        "platform": env.platform,
    }


def _pick(wheels: list[dict[str, Any]], name: str, env: Env, base: str) -> dict[str, Any]:
    """The wheel the install helper's ranking puts first: the one covering this interpreter's
    cell, else the nearest (the checks then say what differs), newest among equals."""
    try:
        best = choose(wheels, name, None, cell(env), nearest=True)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        msg = f"{base}packages.json: a {name} entry is unreadable ({exc!r})"
        raise SiteError(msg) from exc
    if best is None:
        names = sorted({str(w.get("name")) for w in wheels})
        msg = f"{base}packages.json lists no {name} wheel; it has: {', '.join(names) or 'none'}"
        raise UsageError(msg)
    return best


def _entry_facts(entry: dict[str, Any]) -> WheelFacts:
    """Name, label, tag and (when listed) archs of a packages.json entry."""
    name, version, _, tags = parse_wheel_filename(entry["filename"])
    facts = WheelFacts(entry["filename"], name, _label(version.local), min(tags, key=str),
                       version.public)  # fmt: skip
    facts.kernels = listed_kernels(entry.get("kernels"))
    compiled = entry.get("compiled")
    facts.compiled = _printable(compiled) if isinstance(compiled, str) else ""
    archs = entry.get("archs")
    if archs is None:
        facts.archs_known = False
        return facts
    facts.cubins = {_arch(a) for a in archs.get("sass", [])}
    facts.ptx = {_arch(a) for a in archs.get("ptx", [])}
    return facts


def recorded_facts(wheel: Path) -> tuple[str, str]:
    """Where a wheel file's kernels ran and which compile built it, from its build record
    beside it; ("", "") without one."""
    path = record.path_for(wheel)
    if not path.is_file():
        return "", ""
    try:
        facts = record.BuildRecord.read(path)
    except record.RecordError:
        return "", ""
    built = compiled_text(facts) or ""
    ran = facts.kernels
    if ran is None:
        return NOT_RUN, built
    verdict = "ran on" if ran.passed else "failed on"
    shown = f"{ran.sm}, {ran.gpu}, driver {ran.driver}, {ran.checked[:10]}"
    return f"kernels {verdict} {_printable(shown)}", built


def listed_kernels(value: object) -> str:
    """packages.json's `kernels` of a wheel in words; "" for an older index without it."""
    if value == NOT_RUN:
        return NOT_RUN
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        verdict = "ran on" if value.get("passed") is True else "failed on"
        return f"kernels {verdict} {_printable(value['text'])}"
    return ""


def _printable(text: str) -> str:
    """One short line of printable ASCII: what an index or a record says is not trusted."""
    return "".join(c if " " <= c <= "~" else "?" for c in text[:200])


def _arch(arch: str) -> str:
    """'sm_90', 'sm_120a' (or 'compute_90': sm_90), checked; a ValueError for another name."""
    major, minor, variant = arch_target(arch)
    return f"sm_{major}{minor}{variant}"


def report(checks: list[Check]) -> str:
    """A line per check, then each of its fixes (one a line: `fix:`, then `or:`)."""
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        mark = "pass" if c.ok else "FAIL"
        lines.append(f"{mark}  {c.name:<{width}}  found {c.found}; needs {c.needed}")
        for i, fix in enumerate(f for f in c.fix.splitlines() if f and not c.ok):
            lines.append(f"      {'':<{width}}  {'or: ' if i else 'fix:'} {fix}")
    return "\n".join(lines)
