"""The embedded cluster: an API server, controllers and emulated multi-NUMA kubelets in one process.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "apiserver",
    "cluster",
    "controllers",
    "kubelet",
    "profiles",
    "prometheus",
]
