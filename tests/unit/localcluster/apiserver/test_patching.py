"""PATCH content types, JSON patch, merge patch and strategic merge patch on real schemas."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrop.localcluster.apiserver.decisions.patching import (
    PATCH_TYPES,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    patch_type_for,
)
from nrop.localcluster.apiserver.errors import StatusError
from nrop.localcluster.apiserver.openapi import definitions

DEFS = definitions.load()
POD_SCHEMA = DEFS.get(DEFS.for_gvk("", "v1", "Pod") or "")
DEPLOYMENT_SCHEMA = DEFS.get(DEFS.for_gvk("apps", "v1", "Deployment") or "")

BUILTIN_ACCEPTED = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, "
    "application/strategic-merge-patch+json, application/apply-patch+yaml"
)
CUSTOM_ACCEPTED = (
    "the body of the request was in an unknown format - accepted media types include: "
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
)


# --- content types --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "builtin", "kind"),
    [
        pytest.param("application/json-patch+json", True, "json", id="json-builtin"),
        pytest.param("application/merge-patch+json", True, "merge", id="merge-builtin"),
        pytest.param("application/strategic-merge-patch+json", True, "strategic", id="strategic-builtin"),
        pytest.param("application/apply-patch+yaml", True, "apply", id="apply-builtin"),
        pytest.param("application/json-patch+json", False, "json", id="json-custom"),
        pytest.param("application/merge-patch+json", False, "merge", id="merge-custom"),
        pytest.param("application/apply-patch+yaml", False, "apply", id="apply-custom"),
        pytest.param("application/merge-patch+json; charset=utf-8", True, "merge", id="charset-ignored"),
    ],
)
def test_patch_type_for(content_type: str, builtin: bool, kind: str) -> None:
    assert patch_type_for(content_type, builtin=builtin) == kind


@pytest.mark.parametrize(
    ("content_type", "builtin", "message"),
    [
        pytest.param(
            "application/strategic-merge-patch+json", False, CUSTOM_ACCEPTED, id="strategic-on-custom"
        ),
        pytest.param("application/json", True, BUILTIN_ACCEPTED, id="plain-json-builtin"),
        pytest.param("text/plain", False, CUSTOM_ACCEPTED, id="text-custom"),
        pytest.param("", True, BUILTIN_ACCEPTED, id="missing"),
    ],
)
def test_patch_type_for_unsupported(content_type: str, builtin: bool, message: str) -> None:
    with pytest.raises(StatusError) as info:
        patch_type_for(content_type, builtin=builtin)
    assert info.value.code == 415
    assert info.value.status()["reason"] == "UnsupportedMediaType"
    assert info.value.message == message


def test_patch_types_table() -> None:
    assert set(PATCH_TYPES.values()) == {"json", "merge", "strategic", "apply"}


# --- JSON patch -----------------------------------------------------------------------------

DOC = {"metadata": {"name": "x", "labels": {"a": "1"}}, "spec": {"items": [1, 2], "a/b": "s", "t~": 1}}


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        pytest.param(
            [{"op": "add", "path": "/metadata/labels/b", "value": "2"}],
            {"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}}},
            id="add-key",
        ),
        pytest.param(
            [{"op": "add", "path": "/spec/items/-", "value": 3}],
            {"spec": {"items": [1, 2, 3], "a/b": "s", "t~": 1}},
            id="append",
        ),
        pytest.param(
            [{"op": "add", "path": "/spec/items/0", "value": 0}],
            {"spec": {"items": [0, 1, 2], "a/b": "s", "t~": 1}},
            id="insert",
        ),
        pytest.param(
            [{"op": "remove", "path": "/metadata/labels/a"}],
            {"metadata": {"name": "x", "labels": {}}},
            id="remove",
        ),
        pytest.param(
            [{"op": "replace", "path": "/metadata/name", "value": "y"}],
            {"metadata": {"name": "y", "labels": {"a": "1"}}},
            id="replace",
        ),
        pytest.param(
            [{"op": "move", "from": "/metadata/labels", "path": "/metadata/annotations"}],
            {"metadata": {"name": "x", "annotations": {"a": "1"}}},
            id="move",
        ),
        pytest.param(
            [{"op": "copy", "from": "/metadata/name", "path": "/metadata/generateName"}],
            {"metadata": {"name": "x", "labels": {"a": "1"}, "generateName": "x"}},
            id="copy",
        ),
        pytest.param(
            [{"op": "test", "path": "/metadata/name", "value": "x"}, {"op": "remove", "path": "/spec"}],
            {"spec": None},
            id="test-passes",
        ),
        pytest.param(
            [{"op": "remove", "path": "/spec/a~1b"}], {"spec": {"items": [1, 2], "t~": 1}}, id="escape-slash"
        ),
        pytest.param(
            [{"op": "replace", "path": "/spec/t~0", "value": 2}],
            {"spec": {"items": [1, 2], "a/b": "s", "t~": 2}},
            id="escape-tilde",
        ),
        pytest.param([], {}, id="empty-patch"),
    ],
)
def test_apply_json_patch(patch: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    before = copy.deepcopy(DOC)
    result = apply_json_patch(DOC, patch)
    assert before == DOC, "input must not be mutated"
    want = copy.deepcopy(DOC)
    for key, value in expected.items():
        if value is None:
            want.pop(key)
        else:
            want[key] = value
    assert result == want


@pytest.mark.parametrize(
    ("patch", "code", "reason", "message"),
    [
        pytest.param(
            {"op": "add"},
            400,
            "BadRequest",
            "cannot unmarshal object into Go value of type jsonpatch.Patch",
            id="not-a-list",
        ),
        pytest.param(["add"], 400, "BadRequest", "cannot unmarshal string into Go value", id="op-not-object"),
        pytest.param(
            [{"op": "frob", "path": "/a"}], 400, "BadRequest", "unexpected kind: frob", id="unknown-op"
        ),
        pytest.param([{"path": "/a"}], 400, "BadRequest", "unexpected kind: None", id="missing-op"),
        pytest.param(
            [{"op": "add", "value": 1}], 400, "BadRequest", "missing or invalid path", id="missing-path"
        ),
        pytest.param([{"op": "add", "path": "/a"}], 400, "BadRequest", "missing value", id="missing-value"),
        pytest.param(
            [{"op": "move", "path": "/a"}], 400, "BadRequest", "missing or invalid from", id="missing-from"
        ),
        pytest.param(
            [{"op": "add", "path": "a", "value": 1}],
            400,
            "BadRequest",
            "Location must start with /",
            id="relative-path",
        ),
        pytest.param(
            [{"op": "test", "path": "/metadata/name", "value": "nope"}],
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            id="test-fails",
        ),
        pytest.param(
            [{"op": "remove", "path": "/metadata/missing"}],
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            id="remove-missing",
        ),
        pytest.param(
            [{"op": "replace", "path": "/nope/deeper", "value": 1}],
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            id="replace-missing-parent",
        ),
        pytest.param(
            [{"op": "test", "path": "/metadata/name", "value": "x"}] * 10001,
            413,
            "RequestEntityTooLarge",
            "The allowed maximum operations in a JSON patch is 10000, got 10001",
            id="too-many-ops",
        ),
        pytest.param([{"op": "remove", "path": ""}], 422, "Invalid", "the server rejected", id="remove-root"),
    ],
)
def test_apply_json_patch_errors(patch: Any, code: int, reason: str, message: str) -> None:
    before = copy.deepcopy(DOC)
    with pytest.raises(StatusError) as info:
        apply_json_patch(DOC, patch)
    assert before == DOC
    assert info.value.code == code
    assert info.value.status()["reason"] == reason
    assert message in info.value.message


def test_apply_json_patch_failed_test_cause() -> None:
    with pytest.raises(StatusError) as info:
        apply_json_patch(DOC, [{"op": "test", "path": "/metadata/name", "value": "nope"}])
    status = info.value.status()
    assert status["details"]["causes"] == [
        {"reason": "UnexpectedServerResponse", "message": "testing value /metadata/name failed: test failed"}
    ]


def test_apply_json_patch_exactly_the_limit_is_allowed() -> None:
    assert apply_json_patch(DOC, [{"op": "test", "path": "/metadata/name", "value": "x"}] * 10000) == DOC


# --- merge patch ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "patch", "expected"),
    [
        pytest.param({"a": 1}, {"b": 2}, {"a": 1, "b": 2}, id="add"),
        pytest.param({"a": 1, "b": 2}, {"a": None}, {"b": 2}, id="null-deletes"),
        pytest.param({"a": 1}, {"z": None}, {"a": 1}, id="null-missing-noop"),
        pytest.param(
            {"m": {"x": 1, "y": 2}}, {"m": {"y": 3, "z": 4}}, {"m": {"x": 1, "y": 3, "z": 4}}, id="recursive"
        ),
        pytest.param({"l": [1, 2, 3]}, {"l": [4]}, {"l": [4]}, id="lists-replaced"),
        pytest.param({"m": 1}, {"m": {"a": None, "b": 1}}, {"m": {"b": 1}}, id="scalar-to-map-drops-nulls"),
        pytest.param({"m": {"a": 1}}, {"m": "s"}, {"m": "s"}, id="map-to-scalar"),
        pytest.param(
            {"metadata": {"finalizers": ["a", "b"]}},
            {"metadata": {"finalizers": ["b"]}},
            {"metadata": {"finalizers": ["b"]}},
            id="finalizers-replaced",
        ),
    ],
)
def test_apply_merge_patch(obj: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]) -> None:
    before = copy.deepcopy(obj)
    assert apply_merge_patch(obj, patch) == expected
    assert obj == before


@pytest.mark.parametrize(
    "patch",
    [
        pytest.param([{"op": "add"}], id="list"),
        pytest.param("x", id="string"),
        pytest.param(None, id="null"),
    ],
)
def test_apply_merge_patch_rejects_non_objects(patch: Any) -> None:
    with pytest.raises(StatusError) as info:
        apply_merge_patch({"a": 1}, patch)
    assert info.value.code == 400
    assert "into Go value of type map[string]interface {}" in info.value.message


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=4), _json, max_size=4))
def test_merge_patch_with_empty_patch_is_identity(obj: dict[str, Any]) -> None:
    assert apply_merge_patch(obj, {}) == obj


@given(st.dictionaries(st.text(max_size=4), _json, max_size=4))
def test_strategic_patch_with_empty_patch_is_identity(obj: dict[str, Any]) -> None:
    assert apply_strategic_merge_patch(obj, {}, POD_SCHEMA, DEFS) == obj


# --- strategic merge patch ------------------------------------------------------------------


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "labels": {"app": "web"},
            "annotations": {"note": "old"},
            "finalizers": ["a.example.com/f", "b.example.com/f"],
        },
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "nginx:1",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "args": ["--x", "--y"],
                },
                {"name": "sidecar", "image": "busybox"},
            ],
            "tolerations": [{"key": "k1", "operator": "Exists"}],
            "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "cm"}}],
            "nodeSelector": {"zone": "a"},
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _spec(**changes: Any) -> dict[str, Any]:
    pod = _pod()
    pod["spec"].update(changes)
    return pod


def _container(name: str, **changes: Any) -> dict[str, Any]:
    for c in _pod()["spec"]["containers"]:
        if c["name"] == name:
            return {**c, **changes}
    return {"name": name, **changes}


def _with_meta(**changes: Any) -> dict[str, Any]:
    pod = _pod()
    pod["metadata"].update(changes)
    return pod


def _without(pod: dict[str, Any], *path: str) -> dict[str, Any]:
    node = pod
    for part in path[:-1]:
        node = node[part]
    del node[path[-1]]
    return pod


SMP_CASES = [
    pytest.param(
        {
            "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {
                "$setElementOrder/containers": [{"name": "c"}],
                "containers": [{"image": "nginx:2", "name": "c"}],
            },
        },
        _spec(containers=[_container("c", image="nginx:2"), _container("sidecar")])
        | {
            "metadata": _pod()["metadata"]
            | {"annotations": {"note": "old", "kubectl.kubernetes.io/last-applied-configuration": "{}"}}
        },
        id="kubectl-apply-set-element-order",
    ),
    pytest.param(
        {"spec": {"containers": [{"name": "c", "image": "nginx:3"}]}},
        _spec(containers=[_container("c", image="nginx:3"), _container("sidecar")]),
        id="containers-merged-by-name",
    ),
    pytest.param(
        {"spec": {"containers": [{"name": "extra", "image": "x"}]}},
        # Upstream places items the live list does not know before the server-only ones.
        _spec(containers=[{"name": "extra", "image": "x"}, _container("c"), _container("sidecar")]),
        id="new-container-without-order-goes-first",
    ),
    pytest.param(
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "c"}, {"name": "sidecar"}, {"name": "extra"}],
                "containers": [{"name": "extra", "image": "x"}],
            }
        },
        _spec(containers=[_container("c"), _container("sidecar"), {"name": "extra", "image": "x"}]),
        id="new-container-appended-by-set-element-order",
    ),
    pytest.param(
        {"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "c"}]}},
        _spec(containers=[_container("sidecar"), _container("c")]),
        id="set-element-order-alone-reorders",
    ),
    pytest.param(
        {
            "spec": {
                "containers": [
                    {"name": "c", "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}]}
                ]
            }
        },
        _spec(
            containers=[
                _container(
                    "c",
                    env=[
                        {"name": "A", "value": "1"},
                        {"name": "B", "value": "20"},
                        {"name": "C", "value": "3"},
                    ],
                ),
                _container("sidecar"),
            ]
        ),
        id="env-merged-by-name",
    ),
    pytest.param(
        {"spec": {"containers": [{"name": "c", "env": [{"name": "A", "$patch": "delete"}]}]}},
        _spec(containers=[_container("c", env=[{"name": "B", "value": "2"}]), _container("sidecar")]),
        id="env-entry-deleted",
    ),
    pytest.param(
        {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80, "name": "http"}]}]}},
        _spec(
            containers=[
                _container("c", ports=[{"containerPort": 80, "protocol": "TCP", "name": "http"}]),
                _container("sidecar"),
            ]
        ),
        id="ports-merged-by-container-port",
    ),
    pytest.param(
        {"spec": {"containers": [{"name": "c", "args": ["--z"]}]}},
        _spec(containers=[_container("c", args=["--z"]), _container("sidecar")]),
        id="args-replaced",
    ),
    pytest.param(
        {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}},
        _spec(containers=[_container("c")]),
        id="container-deleted",
    ),
    pytest.param(
        {"spec": {"containers": [{"name": "only", "image": "y"}, {"$patch": "replace"}]}},
        _spec(containers=[{"name": "only", "image": "y"}]),
        id="containers-list-replaced",
    ),
    pytest.param(
        {"spec": {"tolerations": [{"key": "k2", "operator": "Exists"}]}},
        _spec(tolerations=[{"key": "k2", "operator": "Exists"}]),
        id="tolerations-replaced",
    ),
    pytest.param(
        {"metadata": {"finalizers": ["c.example.com/f", "a.example.com/f"]}},
        _with_meta(finalizers=["c.example.com/f", "a.example.com/f", "b.example.com/f"]),
        id="finalizers-union",
    ),
    pytest.param(
        {"metadata": {"finalizers": ["b.example.com/f"]}},
        _with_meta(finalizers=["a.example.com/f", "b.example.com/f"]),
        id="finalizers-union-existing-is-noop",
    ),
    pytest.param(
        {
            "metadata": {
                "$setElementOrder/finalizers": ["a.example.com/f", "b.example.com/f", "c.example.com/f"],
                "finalizers": ["c.example.com/f"],
            }
        },
        _with_meta(finalizers=["a.example.com/f", "b.example.com/f", "c.example.com/f"]),
        id="finalizers-ordered",
    ),
    pytest.param(
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example.com/f"]}},
        _with_meta(finalizers=["b.example.com/f"]),
        id="delete-from-primitive-list",
    ),
    pytest.param(
        {
            "metadata": {
                "$deleteFromPrimitiveList/finalizers": ["a.example.com/f"],
                "$setElementOrder/finalizers": ["b.example.com/f"],
            }
        },
        _with_meta(finalizers=["b.example.com/f"]),
        id="delete-from-primitive-list-kubectl-style",
    ),
    pytest.param(
        {"metadata": {"$deleteFromPrimitiveList/absent": ["x"]}},
        _pod(),
        id="delete-from-absent-list-is-noop",
    ),
    pytest.param(
        {"metadata": {"labels": {"app": None, "new": "1"}, "annotations": None}},
        _without(_with_meta(labels={"new": "1"}), "metadata", "annotations"),
        id="null-deletes-keys",
    ),
    pytest.param(
        {"spec": {"nodeSelector": {"$patch": "replace", "disk": "ssd"}}},
        _spec(nodeSelector={"disk": "ssd"}),
        id="map-patch-replace",
    ),
    pytest.param(
        {"spec": {"nodeSelector": {"$patch": "delete"}}},
        _spec(nodeSelector={}),
        id="map-patch-delete",
    ),
    pytest.param(
        {
            "spec": {
                "volumes": [{"name": "data", "$retainKeys": ["hostPath", "name"], "hostPath": {"path": "/d"}}]
            }
        },
        _spec(
            volumes=[
                {"name": "data", "hostPath": {"path": "/d"}},
                {"name": "cfg", "configMap": {"name": "cm"}},
            ]
        ),
        id="retain-keys-on-volumes",
    ),
    pytest.param(
        {"spec": {"volumes": [{"name": "data", "hostPath": {"path": "/d"}}]}},
        _spec(
            volumes=[
                {"name": "data", "emptyDir": {}, "hostPath": {"path": "/d"}},
                {"name": "cfg", "configMap": {"name": "cm"}},
            ]
        ),
        id="volumes-without-retain-keys-merge",
    ),
    pytest.param(
        {
            "status": {
                "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": "False"},
                ]
            }
        },
        _pod()
        | {
            "status": {
                "phase": "Running",
                "conditions": [
                    {"type": "PodScheduled", "status": "True"},
                    {"type": "Ready", "status": "False"},
                ],
            }
        },
        id="conditions-merged-by-type",
    ),
    pytest.param(
        {"spec": {"unknownField": {"a": [1]}, "containers": [{"name": "c", "futureField": [{"x": 1}]}]}},
        _spec(
            unknownField={"a": [1]},
            containers=[_container("c", futureField=[{"x": 1}]), _container("sidecar")],
        ),
        id="unknown-fields-merge-plainly",
    ),
    pytest.param(
        {"spec": {"affinity": {"nodeAffinity": {"x": None, "y": {"$patch": "merge", "z": 1}}}}},
        _spec(affinity={"nodeAffinity": {"y": {"z": 1}}}),
        id="new-subtree-cleaned-of-nulls-and-directives",
    ),
]


@pytest.mark.parametrize(("patch", "expected"), SMP_CASES)
def test_strategic_merge_patch_pod(patch: dict[str, Any], expected: dict[str, Any]) -> None:
    pod = _pod()
    patch_before = copy.deepcopy(patch)
    result = apply_strategic_merge_patch(pod, patch, POD_SCHEMA, DEFS)
    assert pod == _pod(), "input object must not be mutated"
    assert patch == patch_before, "patch must not be mutated"
    assert result == expected
    assert "$" not in repr(sorted(_keys(result))), "directives must not leak"


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def _deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {
                    "containers": [{"name": "app", "image": "app:1", "env": [{"name": "X", "value": "1"}]}]
                },
            },
        },
    }


@pytest.mark.parametrize(
    ("patch", "spec_changes"),
    [
        pytest.param(
            {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}},
            {"strategy": {"type": "Recreate"}},
            id="strategy-retain-keys",
        ),
        pytest.param(
            {"spec": {"strategy": {"type": "Recreate"}}},
            {"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}},
            id="strategy-without-retain-keys-merges",
        ),
        pytest.param(
            {
                "spec": {
                    "template": {
                        "spec": {
                            "$setElementOrder/containers": [{"name": "app"}],
                            "containers": [
                                {
                                    "$setElementOrder/env": [{"name": "X"}, {"name": "Y"}],
                                    "env": [{"name": "Y", "value": "2"}],
                                    "name": "app",
                                }
                            ],
                        }
                    }
                }
            },
            {
                "template": {
                    "metadata": {"labels": {"app": "d"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": "app:1",
                                "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
                            }
                        ]
                    },
                }
            },
            id="nested-set-element-order-on-env",
        ),
        pytest.param({"spec": {"replicas": 3}}, {"replicas": 3}, id="scalar"),
    ],
)
def test_strategic_merge_patch_deployment(patch: dict[str, Any], spec_changes: dict[str, Any]) -> None:
    expected = _deployment()
    expected["spec"].update(spec_changes)
    assert apply_strategic_merge_patch(_deployment(), patch, DEPLOYMENT_SCHEMA, DEFS) == expected


@pytest.mark.parametrize(
    ("patch", "code", "message"),
    [
        pytest.param(["not", "a", "map"], 400, "cannot unmarshal array", id="not-an-object"),
        pytest.param(
            {"spec": {"volumes": [{"name": "data", "$retainKeys": ["name"], "hostPath": {"path": "/d"}}]}},
            400,
            "invalid patch format of retainKeys",
            id="retain-keys-missing-patched-field",
        ),
        pytest.param(
            {"spec": {"strategy": {"$retainKeys": "type"}}},
            400,
            "invalid patch format of retainKeys",
            id="retain-keys-not-a-list",
        ),
        pytest.param(
            {"metadata": {"$setElementOrder/finalizers": "a"}},
            400,
            "invalid patch format of setElementOrder list",
            id="set-element-order-not-a-list",
        ),
        pytest.param(
            {"metadata": {"$deleteFromPrimitiveList/finalizers": "a"}},
            400,
            "invalid patch format of primitive list",
            id="delete-list-not-a-list",
        ),
        pytest.param(
            {"spec": {"containers": [{"image": "nginx"}]}},
            500,
            "does not contain declared merge key: name",
            id="missing-merge-key",
        ),
        pytest.param(
            {"spec": {"containers": [{"name": "c", "$patch": "frob"}]}},
            500,
            "unknown patch type: frob",
            id="unknown-list-directive",
        ),
        pytest.param(
            {"spec": {"$patch": "frob"}}, 500, "unknown patch type: frob in map", id="unknown-map-directive"
        ),
        pytest.param(
            {
                "spec": {
                    "$setElementOrder/containers": [{"name": "c"}],
                    "containers": [{"name": "c"}, {"name": "other"}],
                }
            },
            500,
            "doesn't match $setElementOrder list",
            id="set-element-order-mismatch",
        ),
    ],
)
def test_strategic_merge_patch_errors(patch: Any, code: int, message: str) -> None:
    with pytest.raises(StatusError) as info:
        apply_strategic_merge_patch(_pod(), patch, POD_SCHEMA, DEFS)
    assert info.value.code == code
    assert message in info.value.message


def test_strategic_merge_patch_schema_may_be_a_ref() -> None:
    ref = {"$ref": "#/$defs/io.k8s.api.core.v1.Pod"}
    patch = {"metadata": {"finalizers": ["z"]}}
    assert apply_strategic_merge_patch(_pod(), patch, ref, DEFS) == apply_strategic_merge_patch(
        _pod(), patch, POD_SCHEMA, DEFS
    )
