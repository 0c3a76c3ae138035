"""Generated protobuf messages (regenerate.py)."""

__all__ = [
    "apiextensions",
]
