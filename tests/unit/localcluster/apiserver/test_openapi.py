"""The generated OpenAPI v3 root and per-group/version documents."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from nrop.localcluster.apiserver.openapi.definitions import load
from nrop.localcluster.apiserver.openapi.documents import (
    ServedKind,
    document_hash,
    openapi_document,
    openapi_root,
    schema_name,
)

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {"size": {"type": "integer"}, "color": {"type": "string", "enum": ["red", "blue"]}},
            "required": ["size"],
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}

CORE = (
    ServedKind("", "v1", "Pod", "pods", True, ("status", "binding", "eviction", "log", "proxy")),
    ServedKind("", "v1", "ConfigMap", "configmaps", True),
    ServedKind("", "v1", "Namespace", "namespaces", False, ("status", "finalize")),
    ServedKind("", "v1", "Node", "nodes", False, ("status", "proxy")),
    ServedKind("", "v1", "Service", "services", True, ("status",)),
    ServedKind("", "v1", "Secret", "secrets", True),
    ServedKind("", "v1", "ServiceAccount", "serviceaccounts", True, ("token",)),
    ServedKind("", "v1", "Event", "events", True),
)
APPS = (
    ServedKind("apps", "v1", "Deployment", "deployments", True, ("status", "scale")),
    ServedKind("apps", "v1", "DaemonSet", "daemonsets", True, ("status",)),
)
WIDGET = ServedKind("example.com", "v1", "Widget", "widgets", True, ("status",), WIDGET_SCHEMA)
CLUSTER_WIDGET = ServedKind("example.com", "v1", "Gadget", "gadgets", False, (), {"type": "object"})
ALL = (*CORE, *APPS, WIDGET, CLUSTER_WIDGET)


@pytest.fixture(scope="module")
def defs():
    return load()


@pytest.fixture(scope="module")
def core_doc(defs):
    return openapi_document("", "v1", ALL, defs)


@pytest.fixture(scope="module")
def widget_doc(defs):
    return openapi_document("example.com", "v1", ALL, defs)


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                found.add(value)
            elif not key.startswith("x-"):
                found |= _refs(value)
    elif isinstance(node, list):
        for item in node:
            found |= _refs(item)
    return found


def _patch_ops(doc: dict[str, Any], gvk: dict[str, str]) -> list[dict[str, Any]]:
    """What kubectl's queryParamVerifierV3 looks at: PATCH operations carrying the GVK."""
    ops = [path.get("patch") for path in doc["paths"].values()]
    return [op for op in ops if op and op.get("x-kubernetes-group-version-kind") == gvk]


def test_root_lists_every_group_version_including_crd_groups(defs):
    root = openapi_root(ALL, defs=defs)
    assert set(root["paths"]) == {"api/v1", "apis/apps/v1", "apis/example.com/v1"}
    url = root["paths"]["apis/example.com/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/example.com/v1?hash=")


def test_root_uses_the_given_version_hash():
    root = openapi_root(CORE, lambda key: f"H-{key.replace('/', '-')}")
    assert root == {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=H-api-v1"}}}


def test_root_hash_is_the_document_hash(defs):
    root = openapi_root(ALL, defs=defs)
    doc = openapi_document("apps", "v1", ALL, defs)
    assert root["paths"]["apis/apps/v1"]["serverRelativeURL"].endswith("?hash=" + document_hash(doc))


def test_hash_is_stable_and_follows_content(defs):
    doc = openapi_document("example.com", "v1", (WIDGET,), defs)
    again = json.loads(json.dumps(doc))
    assert document_hash(doc) == document_hash(again)
    assert document_hash(doc) == document_hash(doc).upper()
    assert len(document_hash(doc)) == 128

    changed = ServedKind("example.com", "v1", "Widget", "widgets", True, ("status",), {"type": "object"})
    other = openapi_document("example.com", "v1", (changed,), defs)
    assert document_hash(other) != document_hash(doc)


def test_documents_are_memoised_per_group_version_and_kinds(defs):
    first = openapi_document("apps", "v1", ALL, defs)
    assert openapi_document("apps", "v1", tuple(reversed(ALL)), defs) is first
    assert openapi_document("apps", "v1", APPS[:1], defs) is not first


@pytest.mark.parametrize(
    ("path", "method", "action", "kind"),
    [
        pytest.param("/api/v1/namespaces/{namespace}/pods/{name}", "patch", "patch", "Pod", id="pod-patch"),
        pytest.param("/api/v1/namespaces/{namespace}/pods/{name}", "get", "get", "Pod", id="pod-get"),
        pytest.param("/api/v1/namespaces/{namespace}/pods/{name}", "put", "put", "Pod", id="pod-put"),
        pytest.param(
            "/api/v1/namespaces/{namespace}/pods/{name}", "delete", "delete", "Pod", id="pod-delete"
        ),
        pytest.param("/api/v1/namespaces/{namespace}/pods", "post", "post", "Pod", id="pod-create"),
        pytest.param("/api/v1/namespaces/{namespace}/pods", "get", "list", "Pod", id="pod-list"),
        pytest.param("/api/v1/namespaces/{namespace}/pods", "delete", "deletecollection", "Pod", id="pod-dc"),
        pytest.param("/api/v1/pods", "get", "list", "Pod", id="pod-list-all-namespaces"),
        pytest.param(
            "/api/v1/namespaces/{namespace}/pods/{name}/status", "patch", "patch", "Pod", id="status"
        ),
        pytest.param(
            "/api/v1/namespaces/{namespace}/pods/{name}/binding", "post", "post", "Binding", id="binding"
        ),
        pytest.param("/api/v1/nodes/{name}", "patch", "patch", "Node", id="cluster-scoped-item"),
        pytest.param("/api/v1/nodes", "post", "post", "Node", id="cluster-scoped-collection"),
    ],
)
def test_core_paths_and_operations(core_doc, path, method, action, kind):
    op = core_doc["paths"][path][method]
    assert op["x-kubernetes-action"] == action
    assert op["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": kind}


def test_pod_patch_has_field_validation_as_kubectl_expects(core_doc):
    ops = _patch_ops(core_doc, {"group": "", "version": "v1", "kind": "Pod"})
    assert len(ops) == 2  # the item and its status
    for op in ops:
        params = {(p["name"], p["in"]) for p in op["parameters"]}
        assert ("fieldValidation", "query") in params
        assert "application/strategic-merge-patch+json" in op["requestBody"]["content"]


def test_every_patch_and_write_has_field_validation(core_doc, widget_doc):
    for doc in (core_doc, widget_doc):
        for item in doc["paths"].values():
            for method in ("patch", "put", "post"):
                if method in item:
                    assert "fieldValidation" in {p["name"] for p in item[method]["parameters"]}


def test_other_groups_stay_out_of_the_core_document(core_doc):
    assert not any("deployments" in p or "widgets" in p for p in core_doc["paths"])
    assert "/api/v1/namespaces/{namespace}/pods/{name}/log" not in core_doc["paths"]


def test_scale_subresource_uses_the_autoscaling_scale(defs):
    doc = openapi_document("apps", "v1", APPS, defs)
    op = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"]
    assert op["x-kubernetes-group-version-kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert "io.k8s.api.autoscaling.v1.Scale" in doc["components"]["schemas"]


@pytest.mark.parametrize("doc_name", ["core_doc", "widget_doc"])
def test_refs_all_resolve_inside_the_document(request, doc_name):
    doc = request.getfixturevalue(doc_name)
    schemas = doc["components"]["schemas"]
    refs = _refs(doc)
    assert refs
    for ref in refs:
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.removeprefix("#/components/schemas/") in schemas, ref


def test_schemas_are_openapi_3_0(core_doc):
    def check(node: Any, where: str) -> None:
        if isinstance(node, dict):
            assert "$defs" not in node and "$schema" not in node, where
            if "type" in node and not isinstance(node.get("properties", {}).get("type"), dict):
                assert isinstance(node["type"], str) and node["type"] != "null", where
            if "$ref" in node:
                assert set(node) == {"$ref"}, f"siblings of $ref at {where}"
            for key, value in node.items():
                if key == "properties":
                    for name, sub in value.items():
                        check(sub, f"{where}.{name}")
                elif not key.startswith("x-"):
                    check(value, f"{where}/{key}")
        elif isinstance(node, list):
            for item in node:
                check(item, where)

    for name, schema in core_doc["components"]["schemas"].items():
        check(schema, name)


def test_pod_schema_is_explainable(core_doc):
    schemas = core_doc["components"]["schemas"]
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert {"group": "", "version": "v1", "kind": "Pod"} in pod["x-kubernetes-group-version-kind"]
    spec = pod["properties"]["spec"]
    assert spec["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["type"] == "array"
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert schemas["io.k8s.api.core.v1.Container"]["required"] == ["name"]


def test_custom_resource_document_carries_the_crd_schema(widget_doc, defs):
    name = schema_name(WIDGET, defs)
    assert name == "com.example.v1.Widget"
    schema = widget_doc["components"]["schemas"][name]
    assert schema["properties"]["spec"] == WIDGET_SCHEMA["properties"]["spec"]
    assert schema["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert schema["properties"]["apiVersion"]["type"] == "string"
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "version": "v1", "kind": "Widget"}
    ]
    assert "com.example.v1.WidgetList" in widget_doc["components"]["schemas"]
    assert "properties" not in WIDGET_SCHEMA["properties"]["spec"]["properties"]["size"]  # input untouched
    assert "metadata" not in WIDGET_SCHEMA["properties"]


def test_custom_resource_patch_has_no_strategic_merge(widget_doc):
    op = widget_doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert op["x-kubernetes-group-version-kind"] == {
        "group": "example.com",
        "version": "v1",
        "kind": "Widget",
    }
    assert "fieldValidation" in {p["name"] for p in op["parameters"]}
    assert "application/strategic-merge-patch+json" not in op["requestBody"]["content"]
    assert "application/merge-patch+json" in op["requestBody"]["content"]


def test_cluster_scoped_custom_resource_paths(widget_doc):
    assert "/apis/example.com/v1/gadgets/{name}" in widget_doc["paths"]
    assert not any("namespaces/{namespace}/gadgets" in p for p in widget_doc["paths"])


def test_core_document_builds_quickly(defs):
    # Loose: the exact figure belongs to the benchmarks.
    kinds = (*CORE, ServedKind("", "v1", "PersistentVolume", "persistentvolumes", False, ("status",)))
    start = time.perf_counter()
    openapi_document("", "v1", kinds, defs)
    assert time.perf_counter() - start < 2.0
