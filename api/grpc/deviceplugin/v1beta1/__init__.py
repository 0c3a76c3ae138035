"""Generated stubs for ``package v1beta1`` (device plugins): ``api_pb2``, ``api_pb2_grpc``."""
