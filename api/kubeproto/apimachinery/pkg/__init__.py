"""Generated protobuf messages (regenerate.py)."""

__all__ = [
    "api",
    "apis",
    "runtime",
    "util",
]
