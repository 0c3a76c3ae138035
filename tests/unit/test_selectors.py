"""Label and field selector grammar, matching and per-kind selectable fields."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrop.localcluster.apiserver.errors import BadRequest
from nrop.localcluster.apiserver.selectors import (
    EVERYTHING,
    NOTHING,
    FieldSelector,
    check_field_selector,
    label_selector_from_dict,
    object_fields,
    parse_field_selector,
    parse_label_selector,
    supported_fields,
)

LABELS = {"app": "web", "tier": "front", "example.com/team": "numa", "count": "7"}


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param("", "", id="empty-is-everything"),
        pytest.param("   ", "", id="blank-is-everything"),
        pytest.param("app=web", "app=web", id="equals"),
        pytest.param("app==web", "app==web", id="double-equals"),
        pytest.param("app!=web", "app!=web", id="not-equals"),
        pytest.param("app in (web,db)", "app in (db,web)", id="in-sorted"),
        pytest.param("app notin (web)", "app notin (web)", id="notin"),
        pytest.param("app", "app", id="exists"),
        pytest.param("!app", "!app", id="does-not-exist"),
        pytest.param("  app =  web ,  ! tier ", "app=web,!tier", id="spaces"),
        pytest.param("tier,app", "app,tier", id="sorted-by-key"),
        pytest.param("example.com/team=numa", "example.com/team=numa", id="prefixed-key"),
        pytest.param("app=", "app=", id="empty-value"),
        pytest.param("app in (a,)", "app in (,a)", id="trailing-comma-is-empty-value"),
        pytest.param("app in ()", "app in ()", id="empty-parens-is-empty-value"),
        pytest.param("in in (notin)", "in in (notin)", id="keywords-as-key-and-value"),
        pytest.param("count>5", "count>5", id="greater-than"),
        pytest.param("count<5", "count<5", id="less-than"),
        pytest.param("a=b,a!=c", "a=b,a!=c", id="same-key-twice"),
    ],
)
def test_parse_label_selector_canonical_form(text: str, canonical: str) -> None:
    assert str(parse_label_selector(text)) == canonical


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        pytest.param("", {}, True, id="empty-matches-unlabelled"),
        pytest.param("app=web", LABELS, True, id="equals-hit"),
        pytest.param("app=db", LABELS, False, id="equals-miss"),
        pytest.param("app==web", LABELS, True, id="double-equals-hit"),
        pytest.param("app!=db", LABELS, True, id="not-equals-hit"),
        pytest.param("app!=web", LABELS, False, id="not-equals-miss"),
        pytest.param("missing!=x", LABELS, True, id="not-equals-matches-missing-key"),
        pytest.param("app in (db,web)", LABELS, True, id="in-hit"),
        pytest.param("app in (db)", LABELS, False, id="in-miss"),
        pytest.param("missing in (x)", LABELS, False, id="in-missing-key"),
        pytest.param("app notin (db)", LABELS, True, id="notin-hit"),
        pytest.param("app notin (web)", LABELS, False, id="notin-miss"),
        pytest.param("missing notin (x)", LABELS, True, id="notin-matches-missing-key"),
        pytest.param("app", LABELS, True, id="exists-hit"),
        pytest.param("missing", LABELS, False, id="exists-miss"),
        pytest.param("!missing", LABELS, True, id="not-exists-hit"),
        pytest.param("!app", LABELS, False, id="not-exists-miss"),
        pytest.param("app=web,tier=front", LABELS, True, id="and-both"),
        pytest.param("app=web,tier=back", LABELS, False, id="and-one-fails"),
        pytest.param("example.com/team in (numa)", LABELS, True, id="prefixed-key"),
        pytest.param("app=", {"app": ""}, True, id="empty-value-hit"),
        pytest.param("app=", LABELS, False, id="empty-value-miss"),
        pytest.param("count>5", LABELS, True, id="gt-hit"),
        pytest.param("count<5", LABELS, False, id="lt-miss"),
        pytest.param("app>5", LABELS, False, id="gt-non-integer-label"),
    ],
)
def test_label_selector_matches(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_label_selector(text).matches(labels) is expected


def test_label_selector_matches_none_labels() -> None:
    assert parse_label_selector("!app").matches(None)
    assert not parse_label_selector("app").matches(None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "a b",
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
            id="no-op",
        ),
        pytest.param("a=b c", "found 'c', expected: ',' or 'end of string'", id="junk-after-value"),
        pytest.param("a,", "found '', expected: identifier after ','", id="trailing-comma"),
        pytest.param(",a", "found ',', expected: !, identifier, or 'end of string'", id="leading-comma"),
        pytest.param(
            "a in b", "unable to parse requirement: found 'b' expected: '('", id="in-without-parens"
        ),
        pytest.param(
            "a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'", id="in-no-comma"
        ),
        pytest.param(
            "a in (b", "unable to parse requirement: found '', expected: ',' or ')'", id="in-unclosed"
        ),
        pytest.param(
            "a=(b)", "unable to parse requirement: found '(', expected: identifier", id="paren-value"
        ),
        pytest.param("!a=b", "found '=', expected: ',' or 'end of string'", id="negation-with-value"),
        pytest.param("a=b=c", "found '=', expected: ',' or 'end of string'", id="double-assignment"),
        pytest.param(
            "a/b/c",
            'unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name must consist of',
            id="two-slashes",
        ),
        pytest.param(
            "-a=b",
            'unable to parse requirement: <nil>: Invalid value: "-a": name part must consist of alphanumeric',
            id="key-starts-with-dash",
        ),
        pytest.param(
            "Bad_/x",
            'Invalid value: "Bad_/x": prefix part a lowercase RFC 1123 subdomain must consist of',
            id="bad-prefix",
        ),
        pytest.param("/x", 'Invalid value: "/x": prefix part must be non-empty', id="empty-prefix"),
        pytest.param("k" * 64, "name part must be no more than 63 characters", id="key-too-long"),
        pytest.param(
            "a=" + "v" * 64,
            'unable to parse requirement: values[0][a]: Invalid value: "'
            + "v" * 64
            + '": must be no more than 63',
            id="value-too-long",
        ),
        pytest.param(
            "a=b-",
            'values[0][a]: Invalid value: "b-": a valid label must be an empty string',
            id="value-bad-end",
        ),
        # Set values are sorted before validation, so "-y" is reported as values[0].
        pytest.param("a in (x,-y)", 'values[0][a]: Invalid value: "-y"', id="set-value-invalid"),
        pytest.param("a>b", "for 'Gt', 'Lt' operators, the value must be an integer", id="gt-not-integer"),
    ],
)
def test_parse_label_selector_errors(text: str, message: str) -> None:
    with pytest.raises(BadRequest) as info:
        parse_label_selector(text)
    assert info.value.code == 400
    assert info.value.status()["reason"] == "BadRequest"
    assert message in info.value.message


@pytest.mark.parametrize(
    ("body", "labels", "expected"),
    [
        pytest.param({}, {}, True, id="empty-dict-everything"),
        pytest.param({"matchLabels": {}, "matchExpressions": []}, LABELS, True, id="empty-parts-everything"),
        pytest.param({"matchLabels": {"app": "web"}}, LABELS, True, id="match-labels-hit"),
        pytest.param({"matchLabels": {"app": "db"}}, LABELS, False, id="match-labels-miss"),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]},
            LABELS,
            True,
            id="in",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]},
            LABELS,
            False,
            id="notin",
        ),
        pytest.param({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, LABELS, True, id="exists"),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]},
            LABELS,
            False,
            id="does-not-exist",
        ),
        pytest.param(
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["x"]}],
            },
            LABELS,
            False,
            id="labels-and-expressions",
        ),
    ],
)
def test_label_selector_from_dict(body: dict[str, Any], labels: dict[str, str], expected: bool) -> None:
    assert label_selector_from_dict(body).matches(labels) is expected


def test_label_selector_from_dict_none_matches_nothing() -> None:
    selector = label_selector_from_dict(None)
    assert selector is NOTHING
    assert not selector.matches({})
    assert not selector.matches(LABELS)
    assert label_selector_from_dict({}) is EVERYTHING


def test_label_selector_from_dict_canonical_string() -> None:
    body = {
        "matchLabels": {"tier": "front"},
        "matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}],
    }
    assert str(label_selector_from_dict(body)) == "app in (db,web),tier=front"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]},
            '"Gt" is not a valid label selector operator',
            id="bad-operator",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "In", "values": []}]},
            "for 'in', 'notin' operators, values set can't be empty",
            id="in-without-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
            "values set must be empty for exists and does not exist",
            id="exists-with-values",
        ),
        pytest.param({"matchLabels": {"bad key": "x"}}, 'key: Invalid value: "bad key"', id="bad-key"),
        pytest.param(
            {"matchLabels": {"app": "bad value"}},
            'values[0][app]: Invalid value: "bad value"',
            id="bad-value",
        ),
    ],
)
def test_label_selector_from_dict_errors(body: dict[str, Any], message: str) -> None:
    with pytest.raises(BadRequest) as info:
        label_selector_from_dict(body)
    assert info.value.code == 400
    assert message in info.value.message


_label_part = st.from_regex(r"[a-z0-9]([a-z0-9.-]{0,10}[a-z0-9])?", fullmatch=True)


@given(st.dictionaries(_label_part, _label_part, max_size=5))
def test_selector_built_from_labels_matches_them(labels: dict[str, str]) -> None:
    text = ",".join(f"{k}={v}" for k, v in labels.items())
    selector = parse_label_selector(text)
    assert selector.matches(labels)
    assert parse_label_selector(str(selector)) == selector


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
