"""A single-process Kubernetes API server that unmodified kubectl, kopf and client-python use.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "admission",
    "audit",
    "celrules",
    "crdschema",
    "definitions",
    "discovery",
    "errors",
    "kubeconfig",
    "lifecycle",
    "podlogs",
    "protobuf",
    "rbac",
    "registry",
    "requestoptions",
    "selectors",
    "server",
    "store",
    "strategies",
    "tls",
    "validation",
]
