"""The NUMA-aware scheduler: a scheduling framework with NodeResourceTopologyMatch (CLI ``nrop-scheduler``).

The same framework runs as the operator's secondary scheduler and, in-process, as the
embedded cluster's ``default-scheduler``. The pure half is in :mod:`.framework` (the
framework, plugins, cache and queue) and :mod:`.config` (the configuration file); the modules
at this level are the I/O shell: the loop, informers, client, leader election, events, metrics.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "config",
    "events",
    "framework",
    "informers",
    "kubeclient",
    "leaderelection",
    "main",
    "metrics",
    "scheduler",
]
