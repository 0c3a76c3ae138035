"""The kubelet's pure decisions: pod admission and node fit, pod runtime state and simulated container
behaviour, probes, back-off, entrypoints and container environments, node objects and status, pod
events and node networking. No I/O: the kubelet's loops call them.
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
    "podevents",
    "podruntime",
    "probes",
    "simulation",
]
