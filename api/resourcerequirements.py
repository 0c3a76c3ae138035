"""Validation of a container's ``resources`` (requests and limits), as the API server applies it.

The one copy of upstream ``ValidateContainerResourceRequirements`` (``pkg/apis/core/validation``)
for the rules the stack's workloads exercise:

* names: a container may ask for cpu, memory, ephemeral-storage, hugepages and extended
  resources (``domain/name``), nothing else;
* values: never negative; whole units for integer resources (extended resources);
* a request above its limit is refused; for resources that cannot be overcommitted (hugepages
  and extended resources: devices, ``kni.node/numacellNN``) request and limit must be equal, and
  a request needs a limit;
* hugepages come with cpu or memory.

Problems come back as :class:`~nrop.api.fielderrors.FieldError` values in upstream's wording; the API server turns them into the ``Invalid`` Status causes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .fielderrors import FieldError, forbidden, invalid, required
from .quantity import Quantity, QuantityError, coerce
from .resources import (
    CPU,
    MEMORY,
    is_extended_resource,
    is_hugepages,
    is_integer_resource,
    is_native_resource,
    is_overcommit_allowed,
    is_standard_container_resource,
)

__all__ = ["validate_container_resources", "validate_pod_spec_resources"]


def _quantity(value: Any) -> Quantity | None:
    try:
        return coerce(value)
    except (QuantityError, TypeError, ValueError):
        return None  # a malformed quantity is the schema check's to report


def _name_problems(name: str, path: str) -> list[FieldError]:
    if "/" not in name:
        if not is_standard_container_resource(name):
            return [invalid(path, name, "must be a standard resource for containers")]
    elif not is_native_resource(name) and not is_extended_resource(name):
        return [invalid(path, name, "doesn't follow extended resource name standard")]
    return []


def _value_problems(name: str, qty: Quantity, path: str) -> list[FieldError]:
    problems = []
    if qty < Quantity(0):
        problems.append(invalid(path, str(qty), "must be greater than or equal to 0"))
    if is_integer_resource(name) and qty.milli_value() % 1000 != 0:
        problems.append(invalid(path, str(qty), "must be an integer"))
    return problems


def validate_container_resources(resources: Mapping[str, Any] | None, path: str) -> list[FieldError]:
    """The problems of one container's ``resources`` at ``path`` (``spec.containers[0].resources``)."""
    resources = resources or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    if not isinstance(limits, Mapping) or not isinstance(requests, Mapping):
        return []  # mistyped: the schema check reports it
    lim_path, req_path = f"{path}.limits", f"{path}.requests"
    problems: list[FieldError] = []
    parsed_limits: dict[str, Quantity] = {}
    for name, raw in limits.items():
        key_path = f"{lim_path}[{name}]"
        problems += _name_problems(name, key_path)
        qty = _quantity(raw)
        if qty is not None:
            parsed_limits[name] = qty
            problems += _value_problems(name, qty, key_path)
    for name, raw in requests.items():
        key_path = f"{req_path}[{name}]"
        problems += _name_problems(name, key_path)
        qty = _quantity(raw)
        if qty is None:
            continue
        problems += _value_problems(name, qty, key_path)
        limit = parsed_limits.get(name)
        if name in limits:
            if limit is None:
                continue
            if qty != limit and not is_overcommit_allowed(name):
                problems.append(invalid(req_path, str(qty), f"must be equal to {name} limit of {limit}"))
            elif qty > limit:
                problems.append(
                    invalid(req_path, str(qty), f"must be less than or equal to {name} limit of {limit}")
                )
        elif not is_overcommit_allowed(name):
            problems.append(required(lim_path, "Limit must be set for non overcommitable resources"))
    names = set(limits) | set(requests)
    if any(is_hugepages(name) for name in names) and not names & {CPU, MEMORY}:
        problems.append(forbidden(path, "HugePages require cpu or memory"))
    return problems


def validate_pod_spec_resources(spec: Mapping[str, Any] | None, path: str = "spec") -> list[FieldError]:
    """The resource problems of every app, then init container of a pod spec at ``path`` (the order of
    upstream's ``ValidatePodSpec``: ``validateContainers`` before ``validateInitContainers``)."""
    spec = spec or {}
    problems: list[FieldError] = []
    for field in ("containers", "initContainers"):
        containers: Iterable[Any] = spec.get(field) or ()
        for index, container in enumerate(containers):
            if isinstance(container, Mapping):
                resources = container.get("resources")
                if resources is None or isinstance(resources, Mapping):
                    problems += validate_container_resources(resources, f"{path}.{field}[{index}].resources")
    return problems
