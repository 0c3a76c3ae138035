"""What goes over the wire: content negotiation (which media type a request gets), Kubernetes
protobuf to and from the stored JSON form, and the SPDY/3 frames of ``pods/exec``. Pure.
"""

__all__ = [
    "negotiation",
    "protobuf",
    "spdy",
]
