"""The scheduler's pure half: the scheduling framework, its plugins, the cache and the queue.

Nothing here does I/O (an import-linter contract says so): the loop in :mod:`nrop.sched.scheduler`
feeds watch events in and carries bindings, events and metrics out. The layout follows
kube-scheduler's ``pkg/scheduler``: :mod:`.interface` is the vocabulary plugins see (statuses,
cycle state, node snapshots, extension points), :mod:`.runtime` runs one profile's plugins
over a pod with :mod:`.cycle`'s data, :mod:`.registry` maps configuration names to the
in-tree :mod:`.plugins`, :mod:`.cache` and :mod:`.queue` are upstream's internal cache and
priority queue, and :mod:`.podrequests` is the request arithmetic NodeResourceTopologyMatch reads.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = ["cache", "cycle", "interface", "plugins", "podrequests", "queue", "registry", "runtime"]
