"""What goes over the wire: content negotiation (which media type a request gets) and Kubernetes
protobuf to and from the stored JSON form. Pure.
"""

__all__ = [
    "negotiation",
    "protobuf",
]
