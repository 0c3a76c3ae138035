"""Validation of built-in bodies against their definitions, of names and object metadata, and of pod specs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nrop.localcluster.apiserver.decisions.validation import (
    pod_spec_causes,
    split_path,
    strict_decoding_error,
    validate_builtin,
    validate_name,
    validate_object_meta,
    warning_headers,
)
from nrop.localcluster.apiserver.errors import BadRequest
from nrop.localcluster.apiserver.openapi.definitions import load

POD = "io.k8s.api.core.v1.Pod"
DEPLOYMENT = "io.k8s.api.apps.v1.Deployment"
CONFIGMAP = "io.k8s.api.core.v1.ConfigMap"

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
    r"is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
QUALIFIED_NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.fixture(scope="module")
def defs():
    return load()


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p1",
            "namespace": "default",
            "labels": {"app": "web"},
            "annotations": {"example.com/note": "hi"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u"}],
            "managedFields": [{"manager": "m", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}],
        },
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "nginx",
                    "command": ["sleep", "10"],
                    "env": [{"name": "A", "value": "1"}],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "2"}},
                    "livenessProbe": {"httpGet": {"port": "http", "path": "/"}},
                    "readinessProbe": {"tcpSocket": {"port": 8080}},
                }
            ],
            "nodeSelector": {"kubernetes.io/hostname": "n1"},
            "tolerations": [{"operator": "Exists"}],
            "terminationGracePeriodSeconds": 30,
            "restartPolicy": "Always",
        },
        "status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": True}]},
    }


def _deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": _pod()["spec"]},
        },
    }


def _configmap() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}


def _with(base: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    """A copy of ``base`` with ``value`` set at ``path`` (``...`` as value deletes the key)."""
    out = copy.deepcopy(base)
    target: Any = out
    for part in path[:-1]:
        target = target[part]
    if value is ...:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("def_name", "obj"),
    [
        pytest.param(POD, _pod(), id="pod"),
        pytest.param(DEPLOYMENT, _deployment(), id="deployment"),
        pytest.param(CONFIGMAP, _configmap(), id="configmap"),
        pytest.param(CONFIGMAP, {"metadata": {"name": "c"}, "data": None}, id="null-is-absent"),
        pytest.param("io.k8s.api.core.v1.Secret", {"data": {"k": "aGVsbG8="}}, id="secret-base64"),
        pytest.param("io.k8s.api.core.v1.Pod", _with(_pod(), ["status"], {"phase": "Pending"}), id="status"),
    ],
)
def test_valid_objects_pass(defs, def_name, obj):
    result = validate_builtin(defs, def_name, obj)
    assert result.errors == []
    assert result.unknown_fields == []
    assert result.pruned == obj


@pytest.mark.parametrize(
    ("def_name", "obj", "unknown"),
    [
        pytest.param(POD, _with(_pod(), ["spec", "foo"], 1), ["spec.foo"], id="spec"),
        pytest.param(POD, _with(_pod(), ["foo"], {"a": 1}), ["foo"], id="top-level"),
        pytest.param(POD, _with(_pod(), ["metadata", "labelz"], {}), ["metadata.labelz"], id="metadata"),
        pytest.param(
            POD,
            _with(_pod(), ["spec", "containers", 0, "imagee"], "x"),
            ["spec.containers[0].imagee"],
            id="container",
        ),
        pytest.param(
            POD,
            _with(
                _pod(),
                ["spec", "containers", 0, "env", 0, "valueFrom"],
                {"secretKeyRef": {"key": "k", "x": 1}},
            ),
            ["spec.containers[0].env[0].valueFrom.secretKeyRef.x"],
            id="deep",
        ),
        pytest.param(
            DEPLOYMENT,
            _with(_deployment(), ["spec", "template", "spec", "containers", 0, "bogus"], True),
            ["spec.template.spec.containers[0].bogus"],
            id="deployment-template",
        ),
        pytest.param(
            POD,
            _with(_with(_pod(), ["spec", "foo"], 1), ["spec", "bar"], 2),
            ["spec.foo", "spec.bar"],
            id="in-order",
        ),
        pytest.param(
            POD,
            _with(_pod(), ["metadata", "managedFields", 0, "fieldsV1"], {"f:anything": {"f:x": {}}}),
            [],
            id="free-form-fieldsV1-is-not-unknown",
        ),
        pytest.param(
            CONFIGMAP, _with(_configmap(), ["data", "new-key"], "v"), [], id="map-keys-are-not-unknown"
        ),
    ],
)
def test_unknown_fields_found_at_depth(defs, def_name, obj, unknown):
    result = validate_builtin(defs, def_name, obj)
    assert result.unknown_fields == unknown
    assert result.errors == []
    pruned_again = validate_builtin(defs, def_name, result.pruned)
    assert pruned_again.unknown_fields == []


def test_ignore_reports_no_unknown_fields_but_still_prunes(defs):
    result = validate_builtin(defs, POD, _with(_pod(), ["spec", "foo"], 1), field_validation="Ignore")
    assert result.unknown_fields == []
    assert "foo" not in result.pruned["spec"]


def test_prefix_path_for_custom_resource_metadata(defs):
    result = validate_builtin(
        defs, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", {"name": "w", "nam": "x"}, path="metadata"
    )
    assert result.unknown_fields == ["metadata.nam"]


@pytest.mark.parametrize(
    ("def_name", "obj", "expected"),
    [
        pytest.param(
            POD, _with(_pod(), ["spec", "containers"], ...), ["spec.containers"], id="containers-missing"
        ),
        pytest.param(
            POD, _with(_pod(), ["spec", "containers"], []), ["spec.containers"], id="containers-empty"
        ),
        pytest.param(
            POD, _with(_pod(), ["spec", "containers", 0, "name"], ...), ["spec.containers[0].name"], id="name"
        ),
        pytest.param(
            POD,
            _with(_pod(), ["spec", "containers", 0, "name"], ""),
            ["spec.containers[0].name"],
            id="name-empty",
        ),
        pytest.param(
            POD,
            _with(_pod(), ["spec", "containers", 0, "env", 0, "name"], ...),
            ["spec.containers[0].env[0].name"],
            id="env-name",
        ),
        pytest.param(
            DEPLOYMENT,
            _with(_deployment(), ["spec", "selector"], ...),
            ["spec.selector"],
            id="deployment-selector",
        ),
        pytest.param(
            POD,
            _with(_pod(), ["metadata", "ownerReferences", 0, "uid"], ...),
            ["metadata.ownerReferences[0].uid"],
            id="owner-uid",
        ),
    ],
)
def test_missing_required_fields(defs, def_name, obj, expected):
    errors = validate_builtin(defs, def_name, obj).errors
    assert [(e.field, e.reason, e.message) for e in errors] == [
        (path, "FieldValueRequired", "Required value") for path in expected
    ]


@pytest.mark.parametrize(
    ("def_name", "obj", "field", "message"),
    [
        pytest.param(
            DEPLOYMENT,
            _with(_deployment(), ["spec", "replicas"], "2"),
            "spec.replicas",
            'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
            id="string-for-integer",
        ),
        pytest.param(
            POD,
            _with(_pod(), ["spec", "containers"], {"name": "c"}),
            "spec.containers",
            'Invalid value: "object": spec.containers in body must be of type array: "object"',
            id="object-for-array",
        ),
        pytest.param(
            CONFIGMAP,
            _with(_configmap(), ["data", "a"], 1),
            "data[a]",
            'Invalid value: "integer": data[a] in body must be of type string: "integer"',
            id="map-value",
        ),
        pytest.param(
            POD,
            _with(_pod(), ["metadata", "labels", "app"], True),
            "metadata.labels[app]",
            'Invalid value: "boolean": metadata.labels[app] in body must be of type string: "boolean"',
            id="label-value",
        ),
        pytest.param(
            POD,
            _with(_pod(), ["spec", "containers", 0, "ports", 0, "containerPort"], "80"),
            "spec.containers[0].ports[0].containerPort",
            'Invalid value: "string": spec.containers[0].ports[0].containerPort in body must be of type integer: "string"',
            id="nested-integer",
        ),
        pytest.param(
            POD,
            _with(_pod(), ["spec", "containers", 0, "livenessProbe", "httpGet", "port"], [80]),
            "spec.containers[0].livenessProbe.httpGet.port",
            'Invalid value: "array": spec.containers[0].livenessProbe.httpGet.port in body must be of type '
            'integer or string: "array"',
            id="int-or-string",
        ),
        pytest.param(
            POD,
            _with(_pod(), ["spec", "containers", 0, "resources", "requests", "cpu"], "lots"),
            "spec.containers[0].resources.requests[cpu]",
            "Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            id="quantity",
        ),
        pytest.param(
            POD,
            _with(_pod(), ["kind"], "Deployment"),
            "kind",
            'Unsupported value: "Deployment": supported values: "Pod"',
            id="enum",
        ),
    ],
)
def test_wrong_types(defs, def_name, obj, field, message):
    errors = validate_builtin(defs, def_name, obj).errors
    assert [(e.field, e.message) for e in errors] == [(field, message)]


def test_required_is_not_enforced_under_status(defs):
    obj = _with(_pod(), ["status", "containerStatuses"], [{"name": "c"}])  # no image, imageID, ...
    assert validate_builtin(defs, POD, obj).errors == []


def test_strict_decoding_error_text():
    err = strict_decoding_error(["spec.foo", "spec.bar"])
    assert isinstance(err, BadRequest)
    assert err.code == 400
    assert err.message == 'strict decoding error: unknown field "spec.foo", unknown field "spec.bar"'


def test_warning_headers():
    assert warning_headers(["spec.foo", "spec.containers[0].x"]) == [
        '299 - "unknown field \\"spec.foo\\""',
        '299 - "unknown field \\"spec.containers[0].x\\""',
    ]


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        pytest.param("spec.foo", ["spec", "foo"], id="dotted"),
        pytest.param("spec.containers[0].imagee", ["spec", "containers", 0, "imagee"], id="index"),
        pytest.param(
            "spec.limits[example.com/gpu].x", ["spec", "limits", "example.com/gpu", "x"], id="map-key"
        ),
        pytest.param("foo", ["foo"], id="top"),
    ],
)
def test_split_path(path, parts):
    assert split_path(path) == parts


@pytest.mark.parametrize(
    ("name", "rule", "prefix", "messages"),
    [
        pytest.param("web-1", "subdomain", False, [], id="subdomain-ok"),
        pytest.param("a.b.c", "subdomain", False, [], id="subdomain-dots"),
        pytest.param("Web", "subdomain", False, [SUBDOMAIN_MSG], id="subdomain-upper"),
        pytest.param("web_1", "subdomain", False, [SUBDOMAIN_MSG], id="subdomain-underscore"),
        pytest.param("-web", "subdomain", False, [SUBDOMAIN_MSG], id="subdomain-leading-dash"),
        pytest.param(
            "a" * 254,
            "subdomain",
            False,
            ["must be no more than 253 characters"],
            id="subdomain-too-long",
        ),
        pytest.param("web-", "subdomain", True, [], id="generate-name-trailing-dash"),
        pytest.param("web-", "subdomain", False, [SUBDOMAIN_MSG], id="name-trailing-dash"),
        pytest.param("ns-1", "label", False, [], id="label-ok"),
        pytest.param("a.b", "label", False, [LABEL_MSG], id="label-dot"),
        pytest.param("a" * 64, "label", False, ["must be no more than 63 characters"], id="label-too-long"),
        pytest.param("system:node:n1", "path-segment", False, [], id="path-segment-ok"),
        pytest.param("..", "path-segment", False, ["may not be '..'"], id="path-segment-dotdot"),
        pytest.param(
            "a/b%", "path-segment", False, ["may not contain '/'", "may not contain '%'"], id="slash"
        ),
    ],
)
def test_validate_name(name, rule, prefix, messages):
    assert validate_name(name, rule, prefix=prefix) == messages


@pytest.mark.parametrize(
    ("meta", "namespaced", "expected"),
    [
        pytest.param({"name": "x", "namespace": "default"}, True, [], id="ok"),
        pytest.param({"generateName": "x-", "namespace": "default"}, True, [], id="generate-name"),
        pytest.param(
            {"namespace": "default"},
            True,
            [("metadata.name", "Required value: name or generateName is required")],
            id="no-name",
        ),
        pytest.param(
            {"name": "X", "namespace": "default"},
            True,
            [("metadata.name", f'Invalid value: "X": {SUBDOMAIN_MSG}')],
            id="bad-name",
        ),
        pytest.param({"name": "x"}, True, [("metadata.namespace", "Required value")], id="no-namespace"),
        pytest.param(
            {"name": "x", "namespace": "d"},
            False,
            [("metadata.namespace", "Forbidden: not allowed on this type")],
            id="namespace-on-cluster-kind",
        ),
        pytest.param(
            {"name": "x", "labels": {"example.com/ok": "", "k": "v" * 64}},
            False,
            [("metadata.labels", f'Invalid value: "{"v" * 64}": must be no more than 63 characters')],
            id="label-value-too-long",
        ),
        pytest.param(
            {"name": "x", "labels": {"bad key": "v"}},
            False,
            [("metadata.labels", f'Invalid value: "bad key": {QUALIFIED_NAME_PART_MSG}')],
            id="label-key",
        ),
        pytest.param(
            {"name": "x", "labels": {"k": "-v"}},
            False,
            [("metadata.labels", f'Invalid value: "-v": {LABEL_VALUE_MSG}')],
            id="label-value",
        ),
        pytest.param(
            {"name": "x", "labels": {"/k": "v"}},
            False,
            [("metadata.labels", 'Invalid value: "/k": prefix part must be non-empty')],
            id="label-empty-prefix",
        ),
        pytest.param(
            {"name": "x", "annotations": {"Example.COM/Mixed_Case": "v"}},
            False,
            [],
            id="annotation-keys-case-insensitive",
        ),
        pytest.param(
            {"name": "x", "annotations": {"a": "v" * (256 * 1024)}},
            False,
            [("metadata.annotations", "Too long: may not be more than 262144 bytes")],
            id="annotations-too-large",
        ),
    ],
)
def test_validate_object_meta(meta, namespaced, expected):
    causes = validate_object_meta(meta, namespaced, "subdomain")
    assert [(c.field, c.message) for c in causes] == expected


def test_finalizers_must_be_qualified_names():
    meta = {"name": "x", "finalizers": ["example.com/cleanup", "kubernetes", "bad/fin/alizer"]}
    causes = validate_object_meta(meta, False, "subdomain")
    assert [c.field for c in causes] == ["metadata.finalizers"]
    assert causes[0].message.startswith('Invalid value: "bad/fin/alizer": a qualified name must consist of')
    assert causes[0].message.endswith(
        "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    )


@pytest.mark.parametrize(
    ("sent", "stored"),
    [(2, "2"), (0.5, "500m"), (2.0, "2"), (1.5, "1500m"), ("250m", "250m")],
)
def test_a_quantity_sent_as_a_number_is_stored_as_its_string(defs, sent, stored):
    # `cpu: 2` in YAML reaches the server as a JSON number; Go parses it into a Quantity and
    # serves "2", which clients (the Python client among them) expect to be a string.
    obj = _with(_pod(), ["spec", "containers", 0, "resources", "requests", "cpu"], sent)
    result = validate_builtin(defs, POD, obj)
    assert result.errors == []
    assert result.pruned["spec"]["containers"][0]["resources"]["requests"]["cpu"] == stored


@pytest.mark.parametrize(("sent", "stored"), [(30, 30), (30.0, 30), (0.0, 0)])
def test_an_integral_float_for_an_integer_field_is_stored_as_an_integer(defs, sent, stored):
    # Found by CR fuzzing: the operator copied `replicas: 1.0` from a NUMAResourcesScheduler into
    # its Deployment; the server stored 1.0 and clients decoding int32 fields failed to read it.
    obj = _with(_pod(), ["spec", "terminationGracePeriodSeconds"], sent)
    result = validate_builtin(defs, POD, obj)
    assert result.errors == []
    value = result.pruned["spec"]["terminationGracePeriodSeconds"]
    assert value == stored and type(value) is int


# -- quantities as stored -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        pytest.param("1000m", "1", id="not-canonical"),
        pytest.param("16Ei", "9223372036854775807", id="binary-capped"),
        pytest.param(" 1.441 ", "1.441", id="trimmed-and-kept-verbatim"),
        pytest.param("1e5000", "100e4998", id="past-python-text-limit"),
        pytest.param("2", "2", id="canonical"),
    ],
)
def test_a_stored_pod_serves_its_quantities_as_upstream(defs, sent, stored):
    obj = _with(_pod(), ["spec", "containers", 0, "resources", "limits", "cpu"], sent)
    result = validate_builtin(defs, POD, obj, stored=True)
    assert result.errors == []
    assert result.pruned["spec"]["containers"][0]["resources"]["limits"]["cpu"] == stored
    # Only what the API server stores is re-serialized (the kubelet's static-pod decode is not).
    assert (
        validate_builtin(defs, POD, obj).pruned["spec"]["containers"][0]["resources"]["limits"]["cpu"] == sent
    )


def test_other_kinds_keep_their_quantity_text(defs):
    obj = _with(
        _deployment(), ["spec", "template", "spec", "containers", 0, "resources", "limits", "cpu"], "1000m"
    )
    result = validate_builtin(defs, DEPLOYMENT, obj, stored=True)
    assert result.pruned["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "1000m"


@pytest.mark.parametrize(
    ("sent", "message"),
    [
        pytest.param(
            "lots",
            'Invalid value: "lots": quantities must match the regular expression '
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            id="not-a-quantity",
        ),
        pytest.param("1Mi5", 'Invalid value: "1Mi5": unable to parse quantity\'s suffix', id="bad-suffix"),
    ],
)
def test_a_stored_pod_with_a_bad_quantity_is_refused(defs, sent, message):
    obj = _with(_pod(), ["spec", "containers", 0, "resources", "limits", "cpu"], sent)
    result = validate_builtin(defs, POD, obj, stored=True)
    assert [(c.field, c.message) for c in result.errors] == [
        ("spec.containers[0].resources.limits[cpu]", message)
    ]


def test_an_empty_node_selector_gets_upstreams_detail(defs):
    path = ["spec", "affinity"]
    obj = _with(
        _pod(),
        path,
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}},
    )
    result = validate_builtin(defs, POD, obj)
    assert [(c.field, c.reason, c.message) for c in result.errors] == [
        (
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
            "FieldValueRequired",
            "Required value: must have at least one node selector term",
        )
    ]


# -- pod specs (ValidatePodSpec's rules from nrop.api) -------------------------------------------

_BAD_SPEC = {
    "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "-1"}}}],
    "nodeSelector": {"example.org/k": "not a label value"},
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In"}]}]
            }
        }
    },
    "tolerations": [{"key": "k", "operator": "Maybe"}],
}
_BAD_SPEC_CAUSES = [
    ("containers[0].resources.requests[cpu]", "FieldValueInvalid"),
    ("nodeSelector", "FieldValueInvalid"),
    (
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].values",
        "FieldValueRequired",
    ),
    ("tolerations[0].operator", "FieldValueNotSupported"),
]


@pytest.mark.parametrize(
    ("group", "kind", "obj", "prefix"),
    [
        pytest.param("", "Pod", {"spec": _BAD_SPEC}, "spec.", id="pod"),
        pytest.param(
            "apps",
            "Deployment",
            {"spec": {"template": {"spec": _BAD_SPEC}}},
            "spec.template.spec.",
            id="deployment",
        ),
        pytest.param(
            "apps",
            "DaemonSet",
            {"spec": {"template": {"spec": _BAD_SPEC}}},
            "spec.template.spec.",
            id="daemonset",
        ),
        pytest.param(
            "batch", "Job", {"spec": {"template": {"spec": _BAD_SPEC}}}, "spec.template.spec.", id="job"
        ),
        pytest.param(
            "batch",
            "CronJob",
            {"spec": {"jobTemplate": {"spec": {"template": {"spec": _BAD_SPEC}}}}},
            "spec.jobTemplate.spec.template.spec.",
            id="cronjob",
        ),
        pytest.param(
            "", "PodTemplate", {"template": {"spec": _BAD_SPEC}}, "template.spec.", id="podtemplate"
        ),
    ],
)
def test_pod_spec_causes_in_upstreams_order_at_upstreams_paths(group, kind, obj, prefix):
    causes = pod_spec_causes(group, kind, obj)
    assert [(c.field, c.reason) for c in causes] == [(prefix + f, r) for f, r in _BAD_SPEC_CAUSES]


def test_pod_spec_causes_messages():
    causes = pod_spec_causes("", "Pod", {"spec": _BAD_SPEC})
    assert [c.message for c in causes[1:]] == [
        f'Invalid value: "not a label value": {LABEL_VALUE_MSG}',
        "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        'Unsupported value: "Maybe": supported values: "Equal", "Exists"',
    ]


@pytest.mark.parametrize(
    ("group", "kind", "obj"),
    [
        pytest.param("", "Pod", _pod(), id="valid-pod"),
        pytest.param("", "ConfigMap", {"data": {"nodeSelector": "x"}}, id="not-a-pod-kind"),
        pytest.param("apps", "Deployment", {"spec": {}}, id="no-template"),
    ],
)
def test_pod_spec_causes_none(group, kind, obj):
    assert pod_spec_causes(group, kind, obj) == []
