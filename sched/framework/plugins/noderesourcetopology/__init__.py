"""The NodeResourceTopologyMatch plugin (scheduler-plugins' ``noderesourcetopology``).

:mod:`.plugin` is the framework plugin (Filter, Score, Reserve, the resync of its cache);
the pure parts it composes are :mod:`.args` (plugin args), :mod:`.cache` (the passthrough,
discard-reserved and over-reserve NRT caches), :mod:`.filter` (NUMA alignment of a pod),
:mod:`.score` (the scoring strategies) and :mod:`.preemption` (evictions simulated on NRT data).

Code outside this package imports only what ``__all__`` lists (the plugin class); every other
module here is internal.
"""

from __future__ import annotations

from .plugin import NodeResourceTopologyMatch

__all__ = ["NodeResourceTopologyMatch"]
