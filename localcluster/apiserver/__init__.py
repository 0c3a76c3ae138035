"""A single-process Kubernetes API server that unmodified kubectl, kopf and client-python use.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "clients",
    "crd",
    "decisions",
    "discovery",
    "errors",
    "kubeconfig",
    "lifecycle",
    "listening",
    "openapi",
    "rbac",
    "registry",
    "server",
    "store",
    "tls",
    "wire",
]
