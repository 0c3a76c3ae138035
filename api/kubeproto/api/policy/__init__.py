"""Generated protobuf messages (regenerate.py)."""

__all__ = [
    "v1",
]
