"""The resource topology exporter: per-node NodeResourceTopology objects from sysfs and the kubelet.

``resource-topology-exporter`` (``nrop.rte.main``) runs on a node, reads the machine
from a sysfs tree (:mod:`nrop.rte.sysinfo`) and the kubelet's podresources v1 API
(:mod:`nrop.rte.podres`), builds the NRT as upstream's ``resourcemonitor.Scan`` does
(:mod:`nrop.rte.decisions.scan`, pure) and writes it through the Kubernetes API
(:mod:`nrop.rte.publish`). Nothing here imports ``nrop.localcluster``: the same code
runs against a real kubelet.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "config",
    "decisions",
    "main",
    "numainfoexporter",
    "podres",
    "sysinfo",
    "terminalpods",
]
