"""The API server's pure decisions about objects: validation, the checks every write runs, per-kind
write strategies, PATCH algorithms, DELETE rules, pod admission, selectors, LIST semantics and the
options a write carries. No I/O: the HTTP front and the store call them.
"""

__all__ = [
    "admission",
    "deletion",
    "listing",
    "patching",
    "requestoptions",
    "selectors",
    "strategies",
    "validation",
    "writechecks",
]
