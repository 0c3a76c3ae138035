"""Kubernetes resource names: how a name is classified (native, hugepages, extended, integer,
overcommittable), shared by the API server's validation, the kubelet emulation, the exporter and
the scheduler (upstream ``k8s.io/kubernetes/pkg/apis/core/helper`` and ``v1/helper``)."""

from __future__ import annotations

from typing import Final

from .quantity import Format, format_quantity
from .selectors import qualified_name_errors

CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
HUGEPAGES_PREFIX: Final = "hugepages-"

_NATIVE_PREFIX: Final = "kubernetes.io/"
_REQUESTS_PREFIX: Final = "requests."
#: ``IsStandardContainerResourceName``: what a container may ask for without a domain.
_STANDARD_CONTAINER_RESOURCES: Final = frozenset({CPU, MEMORY, EPHEMERAL_STORAGE})
#: ``IsIntegerResourceName``'s standard (quota) names; every extended resource is integer too.
_INTEGER_RESOURCES: Final = frozenset(
    {
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)


def hugepage_resource_name(page_size_bytes: int) -> str:
    """``hugepages-`` + the page size as a BinarySI quantity: ``hugepages-2Mi``, ``hugepages-1Gi``."""
    return HUGEPAGES_PREFIX + format_quantity(page_size_bytes, Format.BINARY_SI)


def is_native_resource(name: str) -> bool:
    """No domain prefix, or a ``kubernetes.io/`` one (upstream ``IsNativeResource``)."""
    return "/" not in name or _NATIVE_PREFIX in name


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def is_extended_resource(name: str) -> bool:
    """A valid, fully-qualified, non-native resource name (upstream ``IsExtendedResourceName``)."""
    if is_native_resource(name) or name.startswith(_REQUESTS_PREFIX):
        return False
    return not qualified_name_errors(_REQUESTS_PREFIX + name)


def is_standard_container_resource(name: str) -> bool:
    """cpu, memory, ephemeral-storage and hugepages (``IsStandardContainerResourceName``)."""
    return name in _STANDARD_CONTAINER_RESOURCES or is_hugepages(name)


def is_integer_resource(name: str) -> bool:
    """Resources counted in whole units: extended resources and quota object counts."""
    return name in _INTEGER_RESOURCES or is_extended_resource(name)


def is_overcommit_allowed(name: str) -> bool:
    """Native resources other than hugepages may be requested below their limit (``IsOvercommitAllowed``)."""
    return is_native_resource(name) and not is_hugepages(name)
