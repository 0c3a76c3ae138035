"""The one node-selector rule (``nrop.api.nodeaffinity``), as scheduler and DaemonSet controller use it,
and the API server's validation of a pod's node affinity."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.api.nodeaffinity import (
    PreferredTerms,
    RequiredNodeAffinity,
    node_affinity_errors,
    node_selector_errors,
    requirement_error,
)

NODE = {"metadata": {"name": "worker-0", "labels": {"zone": "a", "cores": "44", "role": "worker"}}}


def _spec(selector: dict[str, str] | None = None, *terms: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if selector is not None:
        spec["nodeSelector"] = selector
    if terms:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    return spec


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": op, "values": list(values)}]}


@pytest.mark.parametrize(
    ("spec", "matches"),
    [
        pytest.param({}, True, id="nothing-required"),
        pytest.param(_spec({"zone": "a"}), True, id="selector-match"),
        pytest.param(_spec({"zone": "b"}), False, id="selector-mismatch"),
        pytest.param(_spec({"zone": "a"}, _expr("role", "In", "master")), False, id="selector-and-term"),
        pytest.param(
            _spec(None, _expr("role", "In", "master"), _expr("zone", "Exists")), True, id="terms-ored"
        ),
        pytest.param(_spec(None, _expr("zone", "NotIn", "a")), False, id="notin"),
        pytest.param(_spec(None, _expr("gpu", "DoesNotExist")), True, id="doesnotexist"),
        pytest.param(_spec(None, _expr("cores", "Gt", "43")), True, id="gt"),
        pytest.param(_spec(None, _expr("cores", "Lt", "44")), False, id="lt"),
        pytest.param(_spec(None, _expr("cores", "Gt", "many")), False, id="gt-invalid-bound-matches-nothing"),
        pytest.param(_spec(None, _expr("zone", "In")), False, id="in-without-values-matches-nothing"),
        pytest.param(_spec(None, {}), False, id="empty-term-matches-nothing"),
        pytest.param(
            _spec(
                None, {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker-0"]}]}
            ),
            True,
            id="match-fields-name",
        ),
        pytest.param(
            _spec(
                None, {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["worker-0"]}]}
            ),
            False,
            id="match-fields-not-in",
        ),
    ],
)
def test_required_node_affinity(spec: dict[str, Any], matches: bool) -> None:
    assert RequiredNodeAffinity.of_spec(spec).matches(NODE) is matches
    assert RequiredNodeAffinity.of({"spec": spec}).matches(NODE) is matches


@pytest.mark.parametrize(
    ("req", "field", "error"),
    [
        ({"key": "a", "operator": "In", "values": ["x"]}, False, None),
        ({"key": "a", "operator": "Foo"}, False, ("operator", 'Unsupported value: "Foo"')),
        (
            {"key": "a", "operator": "Exists", "values": ["x"]},
            False,
            ("values", "values set must be empty for exists and does not exist"),
        ),
        (
            {"key": "metadata.name", "operator": "Exists"},
            True,
            ("operator", 'Unsupported value: "Exists": supported values: "In", "NotIn"'),
        ),
        (
            {"key": "metadata.name", "operator": "In", "values": ["a", "b"]},
            True,
            ("values", "must have one element"),
        ),
    ],
)
def test_requirement_error(req: dict[str, Any], field: bool, error: tuple[str, str] | None) -> None:
    assert requirement_error(req, field=field) == error


def test_preferred_terms_sum_the_weights_of_matching_terms() -> None:
    terms = PreferredTerms.of(
        [
            {"weight": 10, "preference": _expr("zone", "In", "a")},
            {"weight": 5, "preference": _expr("role", "In", "master")},
            {"weight": 3, "preference": _expr("cores", "Exists")},
        ]
    )
    assert terms.score(NODE) == 13


# -- API validation (ValidateNodeSelector and friends) -------------------------------------------

NA = "spec.affinity.nodeAffinity"
REQ = f"{NA}.requiredDuringSchedulingIgnoredDuringExecution"
PREF = f"{NA}.preferredDuringSchedulingIgnoredDuringExecution"
EXPR = f"{REQ}.nodeSelectorTerms[0].matchExpressions[0]"
FIELD = f"{REQ}.nodeSelectorTerms[0].matchFields[0]"
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def _required(*expressions: dict[str, Any], fields: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(expressions)}
    if fields:
        term["matchFields"] = list(fields)
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}


@pytest.mark.parametrize(
    ("affinity", "expected"),
    [
        pytest.param(_required({"key": "zone", "operator": "In", "values": ["a"]}), [], id="valid"),
        pytest.param(
            _required({"key": "zone", "operator": "In", "values": []}),
            [f"{EXPR}.values: Required value: must be specified when `operator` is 'In' or 'NotIn'"],
            id="in-without-values",
        ),
        pytest.param(
            _required({"key": "zone", "operator": "DoesNotExist", "values": ["a"]}),
            [f"{EXPR}.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"],
            id="does-not-exist-with-values",
        ),
        pytest.param(
            _required({"key": "cores", "operator": "Lt", "values": []}),
            [
                f"{EXPR}.values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"
            ],
            id="lt-without-value",
        ),
        pytest.param(
            # Upstream's API validation does not check that Gt/Lt values are integers.
            _required({"key": "cores", "operator": "Gt", "values": ["many"]}),
            [],
            id="gt-non-integer-is-not-refused",
        ),
        pytest.param(
            _required({"key": "zone", "operator": "Near", "values": ["a"]}),
            [f'{EXPR}.operator: Invalid value: "Near": not a valid selector operator'],
            id="unknown-operator",
        ),
        pytest.param(
            _required({"key": "a/b/c", "operator": "Exists"}),
            [
                f'{EXPR}.key: Invalid value: "a/b/c": a qualified name must consist of alphanumeric '
                "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')"
            ],
            id="bad-key",
        ),
        pytest.param(
            _required({"key": "zone", "operator": "NotIn", "values": ["ok", "not ok"]}),
            [f'{EXPR}.values[1]: Invalid value: "not ok": {LABEL_VALUE_MSG}'],
            id="required-values-are-label-values",
        ),
        pytest.param(
            _required(fields=({"key": "metadata.name", "operator": "In", "values": ["a", "b"]},)),
            [
                f"{FIELD}.values: Required value: "
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            ],
            id="field-in-two-values",
        ),
        pytest.param(
            _required(fields=({"key": "metadata.labels", "operator": "Exists"},)),
            [
                f'{FIELD}.operator: Invalid value: "Exists": not a valid selector operator',
                f'{FIELD}.key: Invalid value: "metadata.labels": not a valid field selector key',
            ],
            id="field-operator-and-key",
        ),
        pytest.param(
            _required(fields=({"key": "metadata.name", "operator": "In", "values": ["Worker_0"]},)),
            [
                f'{FIELD}.values[0]: Invalid value: "Worker_0": a lowercase RFC 1123 subdomain must consist '
                "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ],
            id="field-value-is-a-node-name",
        ),
        pytest.param(
            {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}},
            [f"{REQ}.nodeSelectorTerms: Required value: must have at least one node selector term"],
            id="no-terms",
        ),
        pytest.param(
            {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 0, "preference": {"matchExpressions": [{"key": "zone", "operator": "In"}]}},
                    {
                        "weight": 1,
                        "preference": {
                            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["not ok"]}]
                        },
                    },
                ]
            },
            [
                f"{PREF}[0].weight: Invalid value: 0: must be in the range 1-100",
                f"{PREF}[0].preference.matchExpressions[0].values: Required value: "
                "must be specified when `operator` is 'In' or 'NotIn'",
            ],
            id="preferred-weight-and-terms-values-unchecked",
        ),
        pytest.param(
            {
                **_required({"key": "zone", "operator": "Exists", "values": ["x"]}),
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 101, "preference": {}}],
            },
            [
                f"{EXPR}.values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                f"{PREF}[0].weight: Invalid value: 101: must be in the range 1-100",
            ],
            id="required-then-preferred",
        ),
        pytest.param(
            {"preferredDuringSchedulingIgnoredDuringExecution": [None]},
            [f"{PREF}[0].weight: Invalid value: 0: must be in the range 1-100"],
            id="null-entry-is-the-zero-term",
        ),
    ],
)
def test_node_affinity_errors(affinity: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in node_affinity_errors(affinity, NA)] == expected


def test_node_selector_errors_may_allow_invalid_label_values() -> None:
    selector = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In", "values": ["a b"]}]}]
    }
    assert node_selector_errors(selector, "x", check_values=False) == []
    (error,) = node_selector_errors(selector, "x")
    assert (error.field, error.reason) == (
        "x.nodeSelectorTerms[0].matchExpressions[0].values[0]",
        "FieldValueInvalid",
    )
