"""The one node-selector rule (``nrop.api.nodeaffinity``), as scheduler and DaemonSet controller use it."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.api.nodeaffinity import PreferredTerms, RequiredNodeAffinity, requirement_error

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
