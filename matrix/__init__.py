"""The maintainers' YAML and the code that loads, validates, expands and plans it: its face is
these modules; queue, majors and the schema helpers serve plan, expand and load."""

__all__ = [
    "expand",
    "facts",
    "gridcache",
    "load",
    "model",
    "plan",
    "report",
    "toolkits",
    "watch",
]
