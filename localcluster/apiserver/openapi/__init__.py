"""The OpenAPI v3 documents the server publishes, the schemas of built-in kinds in them, and the built-
in kinds' definitions they are made from. Pure.
"""

__all__ = [
    "definitions",
    "documents",
    "schemas",
]
