"""One exception hierarchy: each class carries the exit code `main()` returns for it."""

from __future__ import annotations


class WheelfarmError(Exception):
    """Base of every error the CLI reports as a message instead of a traceback."""

    exit_code = 1


class ConfigError(WheelfarmError):
    """The maintainers' YAML is broken. Carries every problem found, not just the first."""

    exit_code = 2

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        super().__init__(
            f"invalid matrix configuration ({count}):\n" + "\n".join(f"  - {p}" for p in problems)
        )


class PlanError(WheelfarmError):
    """A filter or --explain asks for something the matrix does not have."""

    exit_code = 3


class ToolchainError(WheelfarmError):
    """The CUDA toolkit, compiler or a required tool is missing or of the wrong version."""

    exit_code = 4


class BuildError(WheelfarmError):
    """A build step failed; the message names the step and its log file."""

    exit_code = 5


class VerifyError(WheelfarmError):
    """A built wheel breaks a rule the farm promises its users (archs, labels, libraries)."""

    exit_code = 6

    def __init__(self, wheel: str, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(
            f"{wheel} failed verification:\n" + "\n".join(f"  - {p}" for p in problems)
        )


class SiteError(WheelfarmError):
    """The index builder refuses to write a site (it would lose wheels, or a name is unsafe)."""

    exit_code = 7


class PublishError(WheelfarmError):
    """An upload would overwrite a published asset, or GitHub refused a request."""

    exit_code = 8
