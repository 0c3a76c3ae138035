"""The kubelet gRPC protocol definitions (``.proto`` files) as package data.

``podresources/v1/api.proto`` and ``deviceplugin/v1beta1/api.proto`` are written from
the k8s.io/kubelet specification: same packages, services, messages and field numbers,
so they are wire-compatible; gogoproto options are left out. The generated Python
modules live in :mod:`nrop.api.grpc`.

Nothing here is imported by other packages: the ``.proto`` files are package data.
"""

__all__: list[str] = []
