"""Everything that builds and checks one target: its face is these modules, which the CLI,
the farm and the Actions model import; the rest (platforms, relabel, repair policy, symbols,
steps, toolchain, wrapper, ...) serve them."""

__all__ = [
    "binary",
    "build",
    "ccache",
    "envs",
    "gpucheck",
    "group",
    "msvc",
    "shard",
    "source",
    "target",
    "verify",
]
