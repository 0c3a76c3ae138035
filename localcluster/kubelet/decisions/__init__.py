"""The kubelet's pure decisions: pod admission and node fit, pod runtime state and simulated container
behaviour, probes, back-off, entrypoints and container environments, node objects and status, pod
events, node networking and when the PLEG sees a container's exit. No I/O: the kubelet's loops call them.
"""

__all__ = [
    "admission",
    "backoff",
    "containerenv",
    "entrypoints",
    "nodefit",
    "nodenetwork",
    "nodeobjects",
    "nodestatus",
    "pleg",
    "podevents",
    "podruntime",
    "probes",
    "simulation",
]
