"""The torch environment pins torch exactly, so a machine-wide pip constraint that caps torch at
an older release (this machine's /etc/xdg/pip caps it at 2.14.1) must not block torch 2.15.0:
the torch install alone runs with PIP_CONSTRAINT naming the empty file, the build tools keep
pip's configuration; and `build --local` defaults to the newest torch that cap allows whose
PyPI wheel is built for the target's CUDA. The real
install is recorded in docs/building.md (issue 24)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.runner import Recorder
from wheelfarm.builder import envs
from wheelfarm.core.errors import PlanError
from wheelfarm.farm import TargetQuery, choose_target
from wheelfarm.matrix.expand import expand
from wheelfarm.matrix.load import load_matrix

# what envs.IDENTITY_PROGRAM prints, and the env name's tag it gives: an env per interpreter
PROBE = "311 /usr 3.11.2 (main)"
TAG = "cp311-" + hashlib.sha256(b"/usr 3.11.2 (main)").hexdigest()[:8]


def test_only_the_torch_install_sets_the_constraints_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def answer(args: list[str]) -> str:
        if "venv" in args:
            Path(args[-1]).mkdir(parents=True)
        if args[-1].startswith("import json, torch"):
            return json.dumps(["2.15.0+cu132", "13.2"])
        return PROBE

    run = Recorder(answer)
    monkeypatch.setenv("PIP_CONSTRAINT", "/etc/xdg/pip/constraints.txt")
    made = envs.torch_env(
        tmp_path, python="python3", torch="2.15.0", cuda="cu132", index=envs.PIP_INDEX, log=tmp_path / "log",
        run=run,
    )  # fmt: skip
    calls = [
        (args, options["env"]) for args, options in zip(run.commands, run.options, strict=True)
    ]
    assert made.path == tmp_path / "envs" / f"torch2.15.0-cu132-{TAG}"
    installs = {
        next(a for a in args if "==" in a or ">=" in a): env
        for args, env in calls
        if "install" in args
    }
    assert installs["torch==2.15.0"] is not None
    assert installs["torch==2.15.0"]["PIP_CONSTRAINT"] == os.devnull
    assert installs["setuptools>=69"] is None  # pip's own configuration, constraints and all
    assert json.loads((made.path / ".complete").read_text()) == {
        "torch": "2.15.0+cu132",
        "cuda": "13.2",
    }


def test_local_builds_default_to_the_newest_torch_the_cap_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    matrix = load_matrix(REPO)
    expansion = expand(matrix)
    query = TargetQuery(local=True, cuda="cu130", python="3.11", platform="linux_x86_64")
    caps = tmp_path / "constraints.txt"
    caps.write_text(
        "torch<=2.14.1  # local copies\ntorchvision<=0.29.1\n-r other.txt\nnot a req!\n"
    )
    monkeypatch.setenv("PIP_CONSTRAINT", f"{caps} {tmp_path / 'missing.txt'}")
    assert str(envs.pip_torch_cap()) == "<=2.14.1"
    assert choose_target(matrix, expansion, query).build.torch == "2.14.1"
    cu132 = dataclasses.replace(query, cuda="cu132", torch="2.15")  # an explicit --torch: no cap
    assert choose_target(matrix, expansion, cu132).build.torch == "2.15.0"
    monkeypatch.setenv("PIP_CONSTRAINT", os.devnull)  # no cap: the newest torch PyPI has for it
    assert choose_target(matrix, expansion, dataclasses.replace(cu132, torch=None)).build.torch == (
        "2.15.0"
    )
    # PyPI's 2.15.0 is cu132, so a cu130 build from pip's own index takes 2.14.1, as CI's
    # machine (no cap) must; a stable-ABI build (xformers: torch 2.10 and up) too
    assert choose_target(matrix, expansion, query).build.torch == "2.14.1"
    stable = dataclasses.replace(query, package="xformers")
    assert choose_target(matrix, expansion, stable).build.torch == "2.14.1"
    # from a CUDA index, the newest; asked for PyPI's torch on a CUDA it lacks: one clear line
    index = dataclasses.replace(query, torch_index="https://download.pytorch.org/whl/cu130")
    assert choose_target(matrix, expansion, index).build.torch == "2.15.0"
    with pytest.raises(PlanError, match=r"2\.15\.0 is cu132\): pass --torch-index https://"):
        choose_target(matrix, expansion, dataclasses.replace(query, torch="2.15"))


def test_a_second_build_waits_for_the_env_another_is_making_and_reuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two builds of one torch env: the second waits on the env's lock and takes the first's
    env (one install, not two 5 GB copies); one that waits past its bound names the holder."""
    import functools
    import socket
    import threading

    from wheelfarm.core.errors import ToolchainError

    installs: list[str] = []
    entered, release = threading.Event(), threading.Event()

    def answer(args: list[str]) -> str:
        if "venv" in args:
            Path(args[-1]).mkdir(parents=True)
        if "install" in args and "torch==2.14.1" in args:
            installs.append(args[0])
            entered.set()
            release.wait(10)
        if args[-1].startswith("import json, torch"):
            return json.dumps(["2.14.1+cu130", "13.0"])
        return PROBE

    make = functools.partial(envs.torch_env, tmp_path, python="python3", torch="2.14.1",
                             cuda="cu130", index=envs.PIP_INDEX, log=tmp_path / "log",
                             run=Recorder(answer))  # fmt: skip
    made: list[Path] = []
    first = threading.Thread(target=lambda: made.append(make().path))
    first.start()
    assert entered.wait(10)
    monkeypatch.setattr(envs, "ENV_LOCK_TIMEOUT", 0.3)
    with pytest.raises(ToolchainError) as caught:
        make()
    (line,) = str(caught.value).splitlines()
    assert f"held by pid {os.getpid()} on {socket.gethostname()}" in line
    assert f"torch2.14.1-cu130-{TAG}" in line and "waited 0.3 s" in line
    monkeypatch.setattr(envs, "ENV_LOCK_TIMEOUT", 10.0)
    second = threading.Thread(target=lambda: made.append(make().path))
    second.start()
    release.set()
    first.join(10)
    second.join(10)
    assert made == [tmp_path / "envs" / f"torch2.14.1-cu130-{TAG}"] * 2
    assert len(installs) == 1
    assert sorted(p.name for p in (tmp_path / "envs").iterdir()) == [
        ".torch2.14.1-cu130-cp311-269b5052.lock",
        f".torch2.14.1-cu130-{TAG}.manifest.json",  # beside the sealed env (issue 36)
        f"torch2.14.1-cu130-{TAG}",
    ]
