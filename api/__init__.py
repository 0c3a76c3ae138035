"""Definitions shared by every component: CRD manifests, gRPC protocols, quantities, NRT helpers.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "annotations",
    "backoff",
    "checkpoints",
    "crds",
    "deviceplugin",
    "distribution",
    "durations",
    "fielderrors",
    "fingerprint",
    "gomaps",
    "grpc",
    "images",
    "kubeproto",
    "leases",
    "metatime",
    "nodeaffinity",
    "nrt",
    "numaplacement",
    "plainhttp",
    "platform",
    "podrequests",
    "podresources",
    "qos",
    "quantity",
    "reflector",
    "resourcerequirements",
    "resources",
    "selectors",
    "status",
    "tlsprofiles",
    "tolerations",
    "workloads",
]
