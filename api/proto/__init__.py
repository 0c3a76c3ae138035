"""Protocol definitions (``.proto`` files) as package data: the kubelet's gRPC and Kubernetes' API.

``podresources/v1/api.proto`` and ``deviceplugin/v1beta1/api.proto`` are written from
the k8s.io/kubelet specification: same packages, services, messages and field numbers,
so they are wire-compatible; gogoproto options are left out. The generated Python
modules live in :mod:`nrop.api.grpc`.

``k8s.io/<Go package>/generated.proto`` are upstream's, verbatim (k8s.io/api,
apimachinery and apiextensions-apiserver v0.35.3, the groups the embedded API server
serves); their Python modules live in :mod:`nrop.api.kubeproto`, whose ``regenerate.py``
refreshes both.

Nothing here is imported by other packages: the ``.proto`` files are package data.
"""

__all__: list[str] = []
