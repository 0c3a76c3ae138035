"""Field selector grammar and per-kind selectable fields; label selector errors as the API server answers them."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.localcluster.apiserver.decisions.selectors import (
    FieldSelector,
    check_field_selector,
    label_selector_from_dict,
    object_fields,
    parse_field_selector,
    parse_label_selector,
    supported_fields,
)
from nrop.localcluster.apiserver.errors import BadRequest

# --- label selectors: the rules are nrop.api.selectors (tests/unit/api/test_api_selectors.py) ----


def test_bad_label_selector_string_is_a_bad_request() -> None:
    with pytest.raises(BadRequest) as info:
        parse_label_selector("a in (b")
    assert info.value.code == 400
    assert info.value.status()["reason"] == "BadRequest"
    assert info.value.message.startswith("unable to parse requirement: ")


def test_bad_label_selector_body_is_a_bad_request() -> None:
    with pytest.raises(BadRequest) as info:
        label_selector_from_dict({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]})
    assert info.value.code == 400
    assert info.value.message == '"Gt" is not a valid label selector operator'


def test_label_selector_adapters_match_like_the_api_rules() -> None:
    assert parse_label_selector("app in (web)").matches({"app": "web"})
    assert not label_selector_from_dict(None).matches({})
    assert label_selector_from_dict({}).matches({"x": "y"})


# --- field selectors ------------------------------------------------------------------------

POD_FIELDS = {"metadata.name": "p1", "metadata.namespace": "ns", "spec.nodeName": "n1", "status.phase": ""}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("", True, id="empty"),
        pytest.param("metadata.name=p1", True, id="equals-hit"),
        pytest.param("metadata.name==p1", True, id="double-equals-hit"),
        pytest.param("metadata.name=p2", False, id="equals-miss"),
        pytest.param("metadata.name!=p2", True, id="not-equals-hit"),
        pytest.param("metadata.name!=p1", False, id="not-equals-miss"),
        pytest.param("spec.nodeName=n1,metadata.namespace=ns", True, id="and"),
        pytest.param("spec.nodeName=n1,metadata.namespace=other", False, id="and-one-fails"),
        pytest.param("spec.nodeName=", False, id="empty-value-miss"),
        pytest.param("status.phase=", True, id="empty-value-hit"),
        pytest.param("spec.schedulerName=", True, id="missing-field-is-empty"),
        pytest.param("spec.nodeName!=", True, id="not-empty"),
    ],
)
def test_field_selector_matches(text: str, expected: bool) -> None:
    assert parse_field_selector(text).matches(POD_FIELDS) is expected


@pytest.mark.parametrize(
    ("text", "field", "value", "canonical"),
    [
        pytest.param(
            "metadata.name=a\\,b", "metadata.name", "a,b", "metadata.name=a\\,b", id="escaped-comma"
        ),
        pytest.param(
            "metadata.name=a\\=b", "metadata.name", "a=b", "metadata.name=a\\=b", id="escaped-equals"
        ),
        pytest.param(
            "metadata.name=a\\\\b", "metadata.name", "a\\b", "metadata.name=a\\\\b", id="escaped-backslash"
        ),
        pytest.param("metadata.name==x", "metadata.name", "x", "metadata.name=x", id="double-equals"),
        pytest.param("b=2,a=1", "a", "1", "a=1,b=2", id="sorted"),
    ],
)
def test_parse_field_selector_values(text: str, field: str, value: str, canonical: str) -> None:
    selector = parse_field_selector(text)
    assert selector.value_for(field) == value
    assert str(selector) == canonical


def test_field_selector_value_for() -> None:
    selector = parse_field_selector("metadata.name!=x,metadata.namespace=ns")
    assert selector.value_for("metadata.name") is None
    assert selector.value_for("metadata.namespace") == "ns"
    assert [(r.field, r.value, r.negate) for r in selector.requirements] == [
        ("metadata.name", "x", True),
        ("metadata.namespace", "ns", False),
    ]
    assert FieldSelector().empty


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'", id="no-op"
        ),
        pytest.param("a=1,b", "invalid selector: 'a=1,b'; can't understand 'b'", id="second-term-no-op"),
        pytest.param(
            "a=b=c", "invalid field selector: unescaped character in value: =", id="unescaped-equals"
        ),
        pytest.param("a=b\\x", "invalid field selector: invalid escape sequence: \\x", id="bad-escape"),
        pytest.param("a=b\\", "invalid field selector: invalid escape sequence: \\", id="dangling-backslash"),
    ],
)
def test_parse_field_selector_errors(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_field_selector(text)
    assert info.value.code == 400
    assert info.value.message == message


@pytest.mark.parametrize(
    ("group", "resource", "text", "ok"),
    [
        pytest.param("", "pods", "spec.nodeName=n1,status.phase=Running", True, id="pods-node-phase"),
        pytest.param("", "pods", "spec.hostNetwork=true", True, id="pods-host-network"),
        pytest.param("", "pods", "spec.containers=x", False, id="pods-unsupported"),
        pytest.param(
            "", "configmaps", "metadata.name=x,metadata.namespace=y", True, id="default-meta-fields"
        ),
        pytest.param("", "configmaps", "data.key=x", False, id="configmaps-unsupported"),
        pytest.param("", "events", "involvedObject.uid=u,reason=Scheduled", True, id="events"),
        pytest.param("", "secrets", "type=Opaque", True, id="secrets-type"),
        pytest.param("", "nodes", "spec.unschedulable=false", True, id="nodes-unschedulable"),
        pytest.param("", "nodes", "metadata.namespace=x", False, id="nodes-no-namespace-field"),
        pytest.param("", "namespaces", "status.phase=Active", True, id="namespaces-phase"),
        pytest.param("apps", "replicasets", "status.replicas=0", True, id="replicasets"),
        pytest.param("batch", "jobs", "status.successful=1", True, id="jobs"),
        pytest.param("", "services", "spec.clusterIP=None,spec.type=ClusterIP", True, id="services"),
        pytest.param("example.com", "widgets", "spec.color=red", False, id="custom-resource"),
    ],
)
def test_check_field_selector(group: str, resource: str, text: str, ok: bool) -> None:
    selector = parse_field_selector(text)
    if ok:
        check_field_selector(selector, supported_fields(group, resource), resource)
        return
    with pytest.raises(BadRequest) as info:
        check_field_selector(selector, supported_fields(group, resource), resource)
    assert info.value.code == 400
    assert info.value.message.startswith("field label not supported: ")


def test_check_field_selector_names_the_field() -> None:
    with pytest.raises(BadRequest, match=r"^field label not supported: spec\.color$"):
        check_field_selector(parse_field_selector("spec.color=red"), supported_fields("x.io", "ws"), "ws")
    check_field_selector(
        parse_field_selector("spec.color=red"), supported_fields("x.io", "ws") | {"spec.color"}, "ws"
    )


POD = {
    "metadata": {"name": "p1", "namespace": "ns"},
    "spec": {"nodeName": "n1", "restartPolicy": "Always", "schedulerName": "numa", "hostNetwork": True},
    "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.2"}]},
}


@pytest.mark.parametrize(
    ("group", "resource", "obj", "expected"),
    [
        pytest.param(
            "",
            "pods",
            POD,
            {
                "metadata.name": "p1",
                "metadata.namespace": "ns",
                "spec.nodeName": "n1",
                "spec.restartPolicy": "Always",
                "spec.schedulerName": "numa",
                "spec.serviceAccountName": "",
                "spec.hostNetwork": "true",
                "status.phase": "Running",
                "status.podIP": "10.0.0.2",
                "status.nominatedNodeName": "",
            },
            id="pod",
        ),
        pytest.param(
            "",
            "pods",
            {"metadata": {"name": "bare"}},
            {
                "metadata.name": "bare",
                "metadata.namespace": "",
                "spec.nodeName": "",
                "spec.restartPolicy": "",
                "spec.schedulerName": "",
                "spec.serviceAccountName": "",
                "spec.hostNetwork": "false",
                "status.phase": "",
                "status.podIP": "",
                "status.nominatedNodeName": "",
            },
            id="pod-missing-everything",
        ),
        pytest.param(
            "",
            "events",
            {
                "metadata": {"name": "e", "namespace": "ns"},
                "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "ns", "uid": "u1"},
                "reason": "Scheduled",
                "reportingComponent": "sched",
                "type": "Normal",
            },
            {
                "metadata.name": "e",
                "metadata.namespace": "ns",
                "involvedObject.kind": "Pod",
                "involvedObject.namespace": "ns",
                "involvedObject.name": "p1",
                "involvedObject.uid": "u1",
                "involvedObject.apiVersion": "",
                "involvedObject.resourceVersion": "",
                "involvedObject.fieldPath": "",
                "reason": "Scheduled",
                "reportingComponent": "sched",
                "source": "sched",
                "type": "Normal",
            },
            id="event-source-falls-back-to-reporting-component",
        ),
        pytest.param(
            "",
            "nodes",
            {"metadata": {"name": "n1"}, "spec": {}},
            {"metadata.name": "n1", "metadata.namespace": "", "spec.unschedulable": "false"},
            id="node-unschedulable-default",
        ),
        pytest.param(
            "apps",
            "replicasets",
            {"metadata": {"name": "r", "namespace": "ns"}, "status": {"replicas": 3}},
            {"metadata.name": "r", "metadata.namespace": "ns", "status.replicas": "3"},
            id="replicaset-replicas",
        ),
        pytest.param(
            "batch",
            "jobs",
            {"metadata": {"name": "j", "namespace": "ns"}, "status": {}},
            {"metadata.name": "j", "metadata.namespace": "ns", "status.successful": "0"},
            id="job-successful-default",
        ),
        pytest.param(
            "",
            "secrets",
            {"metadata": {"name": "s", "namespace": "ns"}, "type": "Opaque"},
            {"metadata.name": "s", "metadata.namespace": "ns", "type": "Opaque"},
            id="secret-type",
        ),
    ],
)
def test_object_fields(group: str, resource: str, obj: dict[str, Any], expected: dict[str, str]) -> None:
    assert object_fields(group, resource, obj) == expected


def test_object_fields_extra_paths_for_custom_resources() -> None:
    obj = {"metadata": {"name": "w"}, "spec": {"color": "red", "size": 3, "on": False}}
    fields = object_fields(
        "example.com",
        "widgets",
        obj,
        {
            "spec.color": ".spec.color",
            "spec.size": "spec.size",
            "spec.on": "spec.on",
            "spec.gone": "spec.gone",
        },
    )
    assert fields == {
        "metadata.name": "w",
        "metadata.namespace": "",
        "spec.color": "red",
        "spec.size": "3",
        "spec.on": "false",
        "spec.gone": "",
    }
    assert parse_field_selector("spec.color=red,spec.size!=4").matches(fields)


def test_field_selector_on_object_fields_of_a_pod() -> None:
    fields = object_fields("", "pods", POD)
    assert parse_field_selector("spec.nodeName=n1,status.phase=Running").matches(fields)
    assert not parse_field_selector("spec.hostNetwork=false").matches(fields)
