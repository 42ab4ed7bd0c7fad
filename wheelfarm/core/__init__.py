"""What every layer shares: errors, the farm root, platforms, labels, wheel names and files, and
the subprocess and HTTP wrappers. Imports nothing else of wheelfarm (docs/adr/0008-layers.md)."""

__all__ = [
    "archive",
    "buildlog",
    "commands",
    "digest",
    "errors",
    "forked",
    "gcpause",
    "http",
    "jsonread",
    "label",
    "loadcheck",
    "lock",
    "platforms",
    "proc",
    "record",
    "remotewheel",
    "root",
    "schedule",
    "simple",
    "wheelfile",
    "wheelname",
]
