"""One exception hierarchy: each class carries the exit code `main()` returns for it.

| code | class | meaning |
|---:|---|---|
| 1 | WheelfarmError | anything else the farm reports as a message |
| 2 | UsageError | a bad command-line argument, or an input file or folder that is missing |
| 3 | PlanError | a filter, build id or cell the matrix does not have |
| 4 | ToolchainError | the CUDA toolkit, compiler or a tool is missing or of the wrong version |
| 5 | BuildError | a build step failed |
| 6 | VerifyError | a wheel breaks a rule the farm promises its users |
| 7 | SiteError | the index builder refuses to write a site |
| 8 | PublishError | an upload would overwrite a published asset |
| 9 | NetworkError | an HTTP request failed for good |
| 10 | ConfigError | the maintainers' YAML is broken |
| 11 | NoGpuError | a kernel check needs an NVIDIA GPU (and its driver) this machine does not have |
"""

from __future__ import annotations


class WheelfarmError(Exception):
    """Base of every error the CLI reports as a message instead of a traceback."""

    exit_code = 1


class UsageError(WheelfarmError):
    """A command-line argument is wrong, or a file or folder it names does not exist."""

    exit_code = 2


class PlanError(WheelfarmError):
    """A filter, build id or --explain asks for something the matrix does not have."""

    exit_code = 3


class ToolchainError(WheelfarmError):
    """The CUDA toolkit, compiler or a required tool is missing or of the wrong version."""

    exit_code = 4


class BuildError(WheelfarmError):
    """A build step failed; the message names the step and its log file."""

    exit_code = 5


class _ProblemsError(WheelfarmError):
    """An error that lists every problem found under one heading, not just the first."""

    def __init__(self, heading: str, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{heading}:\n" + "\n".join(f"  - {p}" for p in problems))


class VerifyError(_ProblemsError):
    """A built wheel breaks a rule the farm promises its users (archs, labels, libraries)."""

    exit_code = 6

    def __init__(self, wheel: str, problems: list[str]) -> None:
        super().__init__(f"{wheel} failed verification", problems)


class SiteError(WheelfarmError):
    """The index builder refuses to write a site (it would lose wheels, or a name is unsafe)."""

    exit_code = 7


class PublishError(WheelfarmError):
    """An upload would overwrite a published asset, or GitHub refused a request."""

    exit_code = 8


class NetworkError(WheelfarmError):
    """A request failed for good (4xx, or 5xx after every retry); `status` is None when no
    response came."""

    exit_code = 9

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ConfigError(_ProblemsError):
    """The maintainers' YAML is broken. Carries every problem found, not just the first."""

    exit_code = 10

    def __init__(self, problems: list[str]) -> None:
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        super().__init__(f"invalid matrix configuration ({count})", problems)


class NoGpuError(WheelfarmError):
    """`verify --gpu` on a machine without an NVIDIA GPU and driver, or without one the wheel
    carries code for: nothing was run, so it is neither a pass nor a failure."""

    exit_code = 11
