"""Generated stubs for the kubelet podresources API.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "v1",
]
