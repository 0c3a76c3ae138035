"""Generated gRPC stubs for the kubelet protocols (do not edit the ``*_pb2*.py`` files), and the loop they run on.

* :mod:`nrop.api.grpc.podresources.v1` — ``v1.PodResourcesLister`` (kubelet podresources)
* :mod:`nrop.api.grpc.deviceplugin.v1beta1` — ``v1beta1.Registration`` and
  ``v1beta1.DevicePlugin`` (kubelet device plugins)
* :mod:`nrop.api.grpc.aioloop` — the process's background loop on which ``grpc.aio`` servers
  and streams live for code that blocks

Import as ``from nrop.api.grpc.podresources.v1 import api_pb2, api_pb2_grpc``. The
stubs are regenerated from :mod:`nrop.api.proto` by ``regenerate.py`` in this package.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "aioloop",
    "deviceplugin",
    "podresources",
]
