"""What a request does, in authorizer terms (upstream ``RequestInfoFactory`` and ``AttributesRecord``).

This module owns :class:`Attributes` and :func:`request_attributes`, the mapping of an
HTTP method, path and query to a verb, API group, resource, subresource, namespace and
name, or to a non-resource path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nrop.localcluster.apiserver.decisions.selectors import parse_field_selector
from nrop.localcluster.apiserver.errors import BadRequest


@dataclass(frozen=True)
class Attributes:
    """What a request does, in authorizer terms (upstream ``authorizer.AttributesRecord``)."""

    verb: str
    namespace: str = ""
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""
    resource_request: bool = True
    api_version: str = ""


_API_PREFIXES = frozenset({"api", "apis"})
_GROUPLESS_PREFIXES = frozenset({"api"})
# /api/v1/namespaces/{ns}/{x}: these x are subresources of the namespace, not resources in it.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
# Legacy verb-in-path forms: /api/v1/watch/..., /api/v1/proxy/...
_SPECIAL_VERBS = frozenset({"proxy", "watch"})
_SPECIAL_VERBS_NO_SUBRESOURCES = frozenset({"proxy"})
_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


def request_attributes(method: str, path: str, query: Mapping[str, str]) -> Attributes:
    """Map an HTTP request to authorizer attributes, as upstream's ``RequestInfoFactory`` does.

    Paths outside ``/api/v1/...`` and ``/apis/<group>/<version>/...`` (``/version``,
    ``/apis``, ``/openapi/v3``, ``/healthz``) are non-resource requests whose verb is the
    lower-cased HTTP method.
    """
    method = method.upper()
    non_resource = Attributes(verb=method.lower(), path=path, resource_request=False)
    trimmed = path.strip("/")
    parts = trimmed.split("/") if trimmed else []
    if len(parts) < 3 or parts[0] not in _API_PREFIXES:
        return non_resource
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix not in _GROUPLESS_PREFIXES:
        if len(parts) < 3:
            return non_resource
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]

    if parts[0] in _SPECIAL_VERBS:
        if len(parts) < 2:
            # Upstream errors out here; the request cannot name a resource, so treat it as
            # a non-resource request that no rule for resources can grant.
            return non_resource
        verb, parts = parts[0], parts[1:]
    else:
        verb = _METHOD_VERBS.get(method, "")

    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
            parts = parts[2:]

    resource = parts[0]
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 and verb not in _SPECIAL_VERBS_NO_SUBRESOURCES else ""

    if not name and verb == "get":
        verb = "watch" if _is_true(query.get("watch")) else "list"
        selected = _field_selector_name(query.get("fieldSelector", ""))
        if selected and _is_valid_path_segment(selected):
            name = selected
    if not name and verb == "delete":
        verb = "deletecollection"

    return Attributes(
        verb=verb,
        namespace=namespace,
        api_group=group,
        resource=resource,
        subresource=subresource,
        name=name,
        path=path,
        resource_request=True,
        api_version=version,
    )


def _is_true(value: str | None) -> bool:
    # Query booleans: present and not "0"/"false" means true (apimachinery Convert_Slice_string_To_bool).
    if value is None:
        return False
    return not (value == "0" or value.lower() == "false")


def _field_selector_name(selector: str) -> str:
    """The name a ``metadata.name=`` (or ``==``) term pins, else ``""``.

    As upstream, a selector that does not parse names nothing (the request is then
    authorized as a list or watch of the whole collection).
    """
    try:
        return parse_field_selector(selector).value_for("metadata.name") or ""
    except BadRequest:
        return ""


def _is_valid_path_segment(name: str) -> bool:
    return name not in (".", "..") and "/" not in name and "%" not in name
