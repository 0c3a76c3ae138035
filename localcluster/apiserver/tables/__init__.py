"""Server-side ``meta.k8s.io/v1`` Table output (what ``kubectl get`` prints): the built-in printers and
column sets, the shared cells, and the JSONPath subset of CRD printer columns. Pure.
"""

__all__ = [
    "cells",
    "columns",
    "jsonpaths",
    "output",
    "printers",
]
