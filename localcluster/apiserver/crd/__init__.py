"""CustomResourceDefinitions: their schemas (defaults, structural pruning, validation, CEL rules), what
writing one does, and conversion between served versions. Pure.
"""

__all__ = [
    "celrules",
    "conversion",
    "establishing",
    "schema",
    "structural",
    "violations",
]
