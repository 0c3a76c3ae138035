"""The emulated kubelet: resource managers (CPU, memory, devices, topology), gRPC servers and pod runtime.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "checkpointfiles",
    "cm",
    "decisions",
    "fleet",
    "grpcservers",
    "machine",
    "sysfs",
]
