"""Where a URL's host connects: as written, except for the loopback of an embedded cluster's pod.

In a pod, ``127.0.0.1`` (``localhost``, ``::1``) is the pod's own network namespace: upstream's
``curl -k https://127.0.0.1:2112/metrics`` in an exporter's container reaches that exporter. The
embedded cluster's containers share the machine's network instead, each pod on an address of
its own; its runtime names that address in :data:`POD_LOOPBACK_VAR`, and a loopback host then
connects there. The one thing the embedded cluster serves on the machine's loopback for pods is
the API server, the ``default/kubernetes`` Service that ``KUBERNETES_SERVICE_HOST`` and
``KUBERNETES_SERVICE_PORT`` name; that endpoint stays where it is. Without the variable (any
real cluster, a shell on the machine) nothing changes.

Pure: the host, the port and the environment in, the host to connect to out.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["LOOPBACK_HOSTS", "POD_LOOPBACK_VAR", "connect_host"]

#: Set by the embedded cluster's container runtime: the pod's address, which its loopback stands for.
POD_LOOPBACK_VAR = "NROP_POD_LOOPBACK"
#: The spellings of a container's loopback in a URL.
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def connect_host(host: str, port: int, environ: Mapping[str, str]) -> str:
    """The host to connect to for the URL's ``host`` and ``port``."""
    pod = environ.get(POD_LOOPBACK_VAR, "")
    if not pod or host.lower() not in LOOPBACK_HOSTS:
        return host
    service = (environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT"))
    if service == (host, str(port)):
        return host
    return pod
