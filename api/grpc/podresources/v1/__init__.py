"""Generated stubs for ``package v1`` (podresources): ``api_pb2``, ``api_pb2_grpc``."""
