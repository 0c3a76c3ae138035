"""Kubernetes' protobuf messages for the built-in kinds, generated from upstream's ``generated.proto``.

Module paths mirror upstream's Go packages without ``k8s.io/``
(``nrop.api.kubeproto.api.core.v1.generated_pb2`` holds ``k8s.io.api.core.v1.Pod``);
:func:`message_descriptor` finds a message by its proto name (loading them all into the
default descriptor pool once) and :func:`go_fields` says how Go encodes each field in JSON
(``gofields.json``; ``regenerate.py`` writes both). The embedded API server's protobuf codec
is their only user.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

from __future__ import annotations

import importlib
import json
from functools import cache
from pathlib import Path

from google.protobuf.descriptor import Descriptor

__all__ = ["go_fields", "message_descriptor"]

#: Upstream Go packages whose ``generated.proto`` the server needs (served groups and imports).
PROTOS: tuple[str, ...] = (
    "k8s.io/apimachinery/pkg/api/resource",
    "k8s.io/apimachinery/pkg/apis/meta/v1",
    "k8s.io/apimachinery/pkg/runtime",
    "k8s.io/apimachinery/pkg/runtime/schema",
    "k8s.io/apimachinery/pkg/util/intstr",
    "k8s.io/api/core/v1",
    "k8s.io/api/apps/v1",
    "k8s.io/api/batch/v1",
    "k8s.io/api/policy/v1",
    "k8s.io/api/rbac/v1",
    "k8s.io/api/coordination/v1",
    "k8s.io/api/events/v1",
    "k8s.io/api/scheduling/v1",
    "k8s.io/api/node/v1",
    "k8s.io/api/authorization/v1",
    "k8s.io/api/authentication/v1",
    "k8s.io/api/autoscaling/v1",
    "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1",
)
GO_FIELDS = "gofields.json"

#: One Go field as JSON sees it: its JSON name ("" when inlined) and flags (``p``ointer,
#: omit``e``mpty, omit``z``ero).
GoField = tuple[str, str]


@cache
def _descriptors() -> dict[str, Descriptor]:
    found: dict[str, Descriptor] = {}
    for package in PROTOS:
        module_path = package.removeprefix("k8s.io/").replace("-", "_").replace("/", ".")
        module = importlib.import_module(f"{__name__}.{module_path}.generated_pb2")
        for descriptor in module.DESCRIPTOR.message_types_by_name.values():
            found[descriptor.full_name] = descriptor
    return found


def message_descriptor(full_name: str) -> Descriptor | None:
    """The descriptor of a message by its proto name (``k8s.io.api.core.v1.Pod``), None if unknown."""
    return _descriptors().get(full_name)


@cache
def go_fields() -> dict[str, dict[str, GoField]]:
    """``{message full name: {proto field name: (json name, flags)}}`` of the Go structs."""
    raw = json.loads((Path(__file__).parent / GO_FIELDS).read_text(encoding="utf-8"))
    return {message: {name: (j, f) for name, (j, f) in fields.items()} for message, fields in raw.items()}
