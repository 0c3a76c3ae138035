"""The texts of RBAC's 403 answers, word for word as kube-apiserver writes them.

This module owns Go's ``%q`` of string lists (one string: :func:`nrop.api.fielderrors.go_quote`), the authorizer's denial
(:func:`forbidden_message`, upstream ``responsewriters.Forbidden``) and the
:class:`~nrop.localcluster.apiserver.errors.Forbidden` error carrying it.
"""

from __future__ import annotations

from collections.abc import Iterable

from nrop.api.fielderrors import go_quote
from nrop.localcluster.apiserver.errors import Forbidden
from nrop.localcluster.apiserver.rbac.attributes import Attributes
from nrop.localcluster.apiserver.rbac.identity import UserInfo


def go_quote_list(items: Iterable[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(i) for i in items) + "]"


def _denial_text(user: UserInfo, attrs: Attributes) -> str:
    who = f"User {go_quote(user.name)}"
    if not attrs.resource_request:
        return f"{who} cannot {attrs.verb} path {go_quote(attrs.path)}"
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    what = f"{who} cannot {attrs.verb} resource {go_quote(resource)} in API group {go_quote(attrs.api_group)}"
    if attrs.namespace:
        return f"{what} in the namespace {go_quote(attrs.namespace)}"
    return f"{what} at the cluster scope"


def forbidden_message(user: UserInfo, attrs: Attributes, reason: str = "") -> str:
    """The ``message`` of the 403 Status, word for word as kube-apiserver writes it.

    ``pods "p" is forbidden: User "u" cannot get resource "pods/log" in API group "" in the
    namespace "ns"``; non-resource requests read ``forbidden: User "u" cannot get path "/x"``.
    A non-empty authorizer ``reason`` is appended after ``": "``.
    """
    text = _denial_text(user, attrs)
    if reason:
        text = f"{text}: {reason}"
    group, resource = (attrs.api_group, attrs.resource) if attrs.resource_request else ("", "")
    if not group and not resource:
        return f"forbidden: {text}"
    qualified = f"{resource}.{group}" if group else resource
    if attrs.name:
        return f"{qualified} {go_quote(attrs.name)} is forbidden: {text}"
    return f"{qualified} is forbidden: {text}"


def forbidden_error(user: UserInfo, attrs: Attributes, reason: str = "") -> Forbidden:
    """The 403 error with upstream's details: ``name``, ``group``, ``kind`` = the plural resource."""
    if not attrs.resource_request:
        return Forbidden(forbidden_message(user, attrs, reason))
    return Forbidden(
        forbidden_message(user, attrs, reason),
        name=attrs.name,
        group=attrs.api_group,
        kind=attrs.resource,
    )
