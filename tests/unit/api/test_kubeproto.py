"""Kubernetes' generated protobuf messages: current, loadable, and described for Go's JSON."""

from __future__ import annotations

import importlib
import importlib.util

import pytest

from nrop.api import kubeproto
from nrop.api.kubeproto import regenerate

#: Messages with a JSON form of their own (the API server's codec converts them by hand) or none.
HAND_CONVERTED = {
    "k8s.io.apimachinery.pkg.api.resource.Quantity",
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Patch",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Verbs",
    "k8s.io.api.core.v1.List",
    "k8s.io.api.authorization.v1.ExtraValue",
    "k8s.io.api.authentication.v1.ExtraValue",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceSubresourceStatus",
}


@pytest.mark.skipif(
    importlib.util.find_spec("grpc_tools") is None, reason="grpcio-tools (test extra) missing"
)
def test_committed_modules_are_current() -> None:
    stale = regenerate.stale_files()
    assert stale == [], f"stale modules {stale}: run `.venv/bin/python -m nrop.api.kubeproto.regenerate`"


@pytest.mark.parametrize(
    ("name", "fields"),
    [
        pytest.param("k8s.io.api.core.v1.Pod", {"metadata": 1, "spec": 2, "status": 3}, id="Pod"),
        pytest.param(
            "k8s.io.apimachinery.pkg.runtime.Unknown",
            {"typeMeta": 1, "raw": 2, "contentEncoding": 3, "contentType": 4},
            id="Unknown",
        ),
        pytest.param(
            "k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent", {"type": 1, "object": 2}, id="WatchEvent"
        ),
    ],
)
def test_upstream_field_numbers(name: str, fields: dict[str, int]) -> None:
    descriptor = kubeproto.message_descriptor(name)
    assert descriptor is not None
    assert {f.name: f.number for f in descriptor.fields} == fields


def test_every_message_field_has_its_go_json_facts() -> None:
    go = kubeproto.go_fields()
    missing = []
    for package in kubeproto.PROTOS:
        module_path = package.removeprefix("k8s.io/").replace("-", "_").replace("/", ".")
        module = importlib.import_module(f"nrop.api.kubeproto.{module_path}.generated_pb2")
        for descriptor in module.DESCRIPTOR.message_types_by_name.values():
            if descriptor.full_name in HAND_CONVERTED:
                continue
            facts = go.get(descriptor.full_name, {})
            missing += [f"{descriptor.full_name}.{f.name}" for f in descriptor.fields if f.name not in facts]
    assert missing == []


GO_FACTS = [
    pytest.param("k8s.io.api.core.v1.Volume", "volumeSource", ("", ""), id="inlined"),
    pytest.param("k8s.io.api.core.v1.ServicePort", "port", ("port", ""), id="not-omitempty"),
    pytest.param(
        "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "creationTimestamp",
        ("creationTimestamp", "ez"),
        id="omitzero",
    ),
    pytest.param("k8s.io.api.apps.v1.DeploymentSpec", "replicas", ("replicas", "pe"), id="pointer"),
    pytest.param(
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        "ref",
        ("$ref", "pe"),
        id="json-name",
    ),
    pytest.param(
        "k8s.io.api.core.v1.EphemeralContainer",
        "ephemeralContainerCommon",
        ("", ""),
        id="inlined-without-name",
    ),
]


@pytest.mark.parametrize(("message", "field", "expected"), GO_FACTS)
def test_go_facts(message: str, field: str, expected: tuple[str, str]) -> None:
    assert kubeproto.go_fields()[message][field] == expected
