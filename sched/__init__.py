"""The NUMA-aware scheduler: a scheduling framework with NodeResourceTopologyMatch (CLI ``nrop-scheduler``).

The same framework runs as the operator's secondary scheduler and, in-process, as the
embedded cluster's ``default-scheduler``.
"""
