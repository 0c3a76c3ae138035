"""Generated protobuf messages (regenerate.py)."""

__all__ = [
    "generated_pb2",
]
