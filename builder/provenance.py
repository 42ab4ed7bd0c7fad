"""What a build record says about one build: the target, source, toolchain, torch, options,
environment and archs, composed from the builder's own objects into wheelfarm.core.record's
layout (which every reader shares)."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

from wheelfarm import __version__
from wheelfarm.builder import envs, toolchain
from wheelfarm.builder.target import Target
from wheelfarm.builder.verify import Report
from wheelfarm.core import jsonread, record
from wheelfarm.core.digest import sha256_file

WORK = "<work>"  # the work folder as the build record writes it: rebuilds elsewhere match


def set_by_build(env: dict[str, str], target: Target, work: Path) -> dict[str, str]:
    """Every variable the build set or changed (against this process's environment) and the
    package's own (its version's too), sorted, with the work folder written as <work>."""
    own = target.package.env_for(
        target.build.compile_cuda, target.build.platform, None, target.build.version
    )
    keys = {k for k, v in env.items() if os.environ.get(k) != v} | set(own)
    return {k: env[k].replace(str(work), WORK) for k in sorted(keys) if k in env}


def torch_facts(torch_env: envs.TorchEnv) -> record.TorchFacts:
    """What the shared torch environment's maker found in it (its `.complete` file)."""
    marker = torch_env.path / ".complete"
    found = jsonread.loads(marker.read_bytes(), what=str(marker))
    return jsonread.decode(record.TorchFacts, found, what=str(marker), error=record.RecordError)


def _target(target: Target) -> record.TargetFacts:
    b = target.build
    return record.TargetFacts(
        package=b.package,
        version=b.version,
        abi=b.abi,
        cuda=b.cuda,
        torch=b.torch,
        python=b.python,
        platform=b.platform,
        label=b.label,
        archs=b.archs.torch or None,  # None: arch.via none, no device code
        covers=tuple(record.Cell(**asdict(c)) for c in b.covers),
    )


def build_record(
    wheel: Path,
    target: Target,
    *,
    tc: toolchain.Toolchain,
    report: Report,
    env: dict[str, str],
    work: Path,
    torch_env: envs.TorchEnv | None,
    options: record.RecordedOptions,
    timing: record.Timing,
    verified_env: envs.TorchEnv | None = None,
) -> record.BuildRecord:
    """How this wheel was made, for users, the index and provenance. Everything but `timing`
    is the same when the same target is built again (in any work folder): what publish
    hashes and `verify --rebuild` rebuilds from. `torch_env` is the compile's torch,
    `verified_env` the one the wheel's import check ran beside."""
    s = target.source
    return record.BuildRecord(
        version=record.VERSION,
        build_id=target.build.id,
        wheelfarm=__version__,
        target=_target(target),
        source=record.SourceFacts(
            sdist=s.source.sdist,
            git=s.source.git,
            path=s.source.path,
            subdir=s.source.subdir,
            digest=s.source.digest,
            patches=tuple(s.patches),
        ),
        toolchain=record.ToolchainFacts(
            cuda=str(tc.version), cuda_home=str(tc.cuda_home), compiler=tc.compiler
        ),
        torch=torch_facts(torch_env) if torch_env else None,
        options=options,
        environment=set_by_build(env, target, work),
        archs_found={
            k: record.Archs(cubins=tuple(v["cubins"]), ptx=tuple(v["ptx"]))
            for k, v in report.archs.items()
        },
        wheel=record.WheelFacts(
            filename=wheel.name, sha256=sha256_file(wheel), size=wheel.stat().st_size
        ),
        timing=timing,
        compiled=record.CompiledFacts(
            id=target.build.compile_id,
            cuda=target.build.compile_cuda,
            variants=target.build.variants,
            verified_with=(
                torch_facts(verified_env)
                if verified_env is not None and verified_env != torch_env
                else None
            ),
        ),
    )
