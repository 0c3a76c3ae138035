"""The operator's pure decisions: validating the two CRs (``nropspec``, ``nrsspec``), rendering the
operands' manifests (``manifests``, ``rtemanifests``, ``schedmanifests``, ``machineconfigs``), the
objects' names (``naming``) and the status conditions (``conditions``). No I/O: the reconcilers call
them; ``make lint``'s purity contract names this package.
"""

__all__ = [
    "conditions",
    "machineconfigs",
    "manifests",
    "naming",
    "nropspec",
    "nrsspec",
    "rtemanifests",
    "schedmanifests",
]
