"""Every subcommand answers a bad argument and a missing file with one line naming it, an exit
code from the error hierarchy, and no traceback; the farm root is found as documented."""

from __future__ import annotations

import ast
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.roots import REPO
from tests.unit.helpers.roots import package_yaml
from wheelfarm.cli import main
from wheelfarm.core.errors import UsageError
from wheelfarm.core.root import FarmRoot, find_root

MISSING = "/nonexistent/wheelfarm-test"
# subcommand -> (a bad argument, a missing file or folder), each a full argv
CASES = {
    "validate": (["validate", "--bogus"], ["validate", "--root", MISSING]),
    "plan": (["plan", "--max-jobs", "many"], ["plan", "--existing", MISSING]),
    "build": (["build", "--local", "--nope"], ["build", "--local", "--root", MISSING]),
    "farm": (["farm", "--store"], ["farm", "--root", MISSING]),
    "verify": (["verify"], ["verify", f"{MISSING}.whl", "--local"]),
    "index": (["index", "--wheelhouse"], ["index", "--wheelhouse", MISSING]),
    "publish": (["publish", "x", "--repo"], ["publish", MISSING, "--repo", "octo/farm"]),
    "coverage": (["coverage", "--write-docs=yes"], ["coverage", "--existing", MISSING]),
    "toolkit": (
        ["toolkit", "cu130", "--platform", "macos"],
        ["toolkit", "cu130", "--root", MISSING],
    ),
    "install-cuda": (
        ["install-cuda", "cu130"],
        ["install-cuda", "cu130", "--dest", "x", "--root", MISSING],
    ),
    "msvc-env": (
        ["msvc-env", "--cuda-home"],
        [
            "msvc-env",
            "--cuda-home",
            "C:/cuda",
            "--vcvars-output",
            MISSING,
            "--github-env",
            "env",
            "--github-path",
            "path",
        ],
    ),
    "gpu-check": (["gpu-check"], ["gpu-check", "--facts", f"{MISSING}.whl"]),
    "pages-url": (["pages-url", "--repo"], ["pages-url", "--repo", "o/r", "--root", MISSING]),
    "serve": (["serve", "--port", "eighty"], ["serve", MISSING]),
    "shard": (["shard", "x"], ["shard", "x", "--plan-file", MISSING]),
    "watch": (["watch", "--torch-index"], ["watch", "--root", MISSING]),
    "doctor": (["doctor"], ["doctor", f"{MISSING}.whl"]),
    "request": (["request"], ["request", "--body-file", MISSING]),
    "pr": (
        ["pr", "--head"],
        ["pr", "--repo", "o/r", "--head", "b", "--title", "t", "--body-file", MISSING],
    ),
}


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


def test_every_subcommand_is_covered() -> None:
    from wheelfarm.cli import _parser

    sub = next(a for a in _parser()._actions if a.dest == "command")
    assert set(sub.choices) == set(CASES)  # type: ignore[arg-type]


@pytest.mark.parametrize("command", sorted(CASES))
def test_bad_argument_is_one_line_with_exit_2(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(CASES[command][0], capsys)
    assert code == UsageError.exit_code
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("wheelfarm: error: ") and "--help" in err


@pytest.mark.parametrize("command", sorted(CASES))
def test_missing_file_is_one_line_naming_it(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO.path)
    code, err = _run(CASES[command][1], capsys)
    assert code == UsageError.exit_code, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"wheelfarm {command}: error: ")
    assert MISSING in err


def test_unknown_package_is_a_plan_error_not_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO.path)
    code, err = _run(["build", "--package", "flash-atn", "--cuda", "cu130"], capsys)
    assert code == 3
    assert "unknown package 'flash-atn'" in err and "did you mean 'flash-attn'" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--local"], "--rebuild takes the target from the wheel's build record: drop --local"),
        (["some-build-id"], "build record: drop BUILD_ID"),
        (["--archs", "9.0"], "drop --archs"),
        (["--torch-index", "pip"], "drop --torch-index"),
        (["--no-import"], "import check included: drop --no-import"),
        ([], "build record (pass --record PATH) '{wheel}.build.json': no such file"),
        (["--record", MISSING], f"--record '{MISSING}': no such file"),
    ],
)
def test_verify_rebuild_argument_errors(
    extra: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = tmp_path / "demo-0.1.0-cp312-cp312-linux_x86_64.whl"
    wheel.write_bytes(b"")
    code, err = _run(["verify", str(wheel), *extra, "--rebuild"], capsys)
    assert code == UsageError.exit_code
    assert err.count("\n") == 1 and message.format(wheel=wheel) in err


def test_verify_record_needs_rebuild(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = tmp_path / "demo-0.1.0-cp312-cp312-linux_x86_64.whl"
    wheel.write_bytes(b"")
    code, err = _run(["verify", str(wheel), "--local", "--record", str(wheel)], capsys)
    assert code == UsageError.exit_code and "--record goes with --rebuild" in err


def test_root_is_the_checkout_around_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fork = tmp_path / "fork"
    shutil.copytree(REPO.matrix, fork / "matrix")
    (fork / "deep" / "er").mkdir(parents=True)
    assert find_root(cwd=fork / "deep" / "er").path == fork
    assert find_root(cwd=fork).origin == "checkout"
    assert find_root(fork, cwd=tmp_path).origin == "--root"


def test_root_falls_back_to_the_installed_package(tmp_path: Path) -> None:
    root = find_root(cwd=tmp_path)  # no farm around tmp_path
    assert root.origin == "installed package"
    assert (root.matrix / "torch.yaml").is_file()
    assert (root.templates / "landing.html").is_file()
    assert (root.path / "demo" / "wheelfarm-demo" / "setup.py").is_file()


def test_a_path_source_cannot_leave_the_root() -> None:
    with pytest.raises(UsageError, match="leaves the farm root"):
        REPO.inside("../../etc", "source path")
    with pytest.raises(UsageError, match="leaves the farm root"):
        REPO.inside("/etc/ssl", "source path")
    assert REPO.inside("demo/wheelfarm-demo", "source path").is_dir()


def test_validate_reads_the_root_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fork = tmp_path / "fork"
    shutil.copytree(REPO.matrix, fork / "matrix")
    extra = (fork / "matrix" / "packages" / "wheelfarm-demo.yaml").read_text()
    (fork / "matrix" / "packages" / "fork-demo.yaml").write_text(
        extra.replace("name: wheelfarm-demo", "name: fork-demo")
    )
    assert main(["validate", "--root", str(fork)]) == 0
    out = capsys.readouterr().out
    count = len(list((fork / "matrix" / "packages").glob("*.yaml")))
    assert f"ok: {count} packages" in out and str(fork) in out


def test_log_level_follows_quiet_and_verbose(
    capsys: pytest.CaptureFixture[str], matrix_dir: Callable[..., FarmRoot]
) -> None:
    """A plan with jobs past the hosted limit warns: shown by default, hidden by -qq."""
    slow = package_yaml("slow-pkg", extra="build_minutes_per_arch: 10000\n")  # past splitting
    root = matrix_dir({"slow-pkg": slow})
    argv = ["plan", "--root", str(root.path), "--format", "json"]
    assert main(argv) == 0
    assert "warning: slow-pkg" in capsys.readouterr().err
    assert main([*argv, "-qq"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["-v", "validate"]) == 0


# what a command module may import at its top: `wheelfarm --help` runs every `configure`
LIGHT = {"wheelfarm", "wheelfarm.cli", "wheelfarm.core.errors", "wheelfarm.core.root"}
LIGHT |= {"wheelfarm.core.platforms", "wheelfarm.index.lock"}


def test_the_command_modules_import_the_builder_and_the_network_only_in_execute() -> None:
    heavy = []
    for path in sorted((REPO.path / "wheelfarm" / "cli").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # not TYPE_CHECKING's
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            heavy += [
                f"{path.name}:{node.lineno} {name}"
                for name in names
                if name not in LIGHT and name.split(".")[0] not in sys.stdlib_module_names
            ]
    assert not heavy, heavy
