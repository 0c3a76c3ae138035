"""The in-tree plugins of the scheduling framework, one module per upstream plugin.

Each module reproduces the upstream kube-scheduler (v1.33) plugin of the same name:
its extension points, failure reasons, scores and args.  The registry
(:mod:`nrop.sched.framework.registry`) maps configuration names to these classes.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "balancedallocation",
    "defaultbinder",
    "defaultpreemption",
    "interpodaffinity",
    "nodeaffinity",
    "nodename",
    "nodeports",
    "noderesourcesfit",
    "noderesourcetopology",
    "nodeunschedulable",
    "prioritysort",
    "schedulinggates",
    "tainttoleration",
]
