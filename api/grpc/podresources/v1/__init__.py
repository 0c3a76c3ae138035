"""Generated stubs for ``package v1`` (podresources): ``api_pb2``, ``api_pb2_grpc``.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "api_pb2",
    "api_pb2_grpc",
]
