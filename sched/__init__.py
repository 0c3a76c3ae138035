"""The NUMA-aware scheduler: a scheduling framework with NodeResourceTopologyMatch (CLI ``nrop-scheduler``).

The same framework runs as the operator's secondary scheduler and, in-process, as the
embedded cluster's ``default-scheduler``.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "clientconfig",
    "config",
    "events",
    "framework",
    "informers",
    "kubeclient",
    "leaderelection",
    "leases",
    "main",
    "metrics",
    "queue",
    "registry",
    "runtime",
    "scheduler",
]
