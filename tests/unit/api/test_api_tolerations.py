"""Taints and tolerations (nrop.api.tolerations): matching, validation messages, taint edits."""

from __future__ import annotations

from typing import Any

import pytest

from nrop.api.tolerations import (
    add_or_update_taint,
    find_untolerated_taint,
    parse_taint,
    remove_taint,
    same_toleration,
    sorted_tolerations,
    tolerates,
    toleration_errors,
    tolerations_errors,
    tolerations_tolerate,
)


def mk_taint(key: str, effect: str, value: str | None = None) -> dict:
    return {"key": key, "effect": effect, **({"value": value} if value else {})}


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        pytest.param(
            {"operator": "Exists"},
            {"key": "a", "value": "b", "effect": "NoSchedule"},
            True,
            id="exists-no-key-tolerates-all",
        ),
        pytest.param(
            {"key": "a", "operator": "Exists"},
            {"key": "a", "value": "x", "effect": "NoExecute"},
            True,
            id="exists-any-value",
        ),
        pytest.param(
            {"key": "a", "operator": "Exists"},
            {"key": "b", "effect": "NoSchedule"},
            False,
            id="exists-other-key",
        ),
        pytest.param(
            {"key": "a", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
            {"key": "a", "value": "v", "effect": "NoSchedule"},
            True,
            id="equal-all-match",
        ),
        pytest.param(
            {"key": "a", "operator": "Equal", "value": "v"},
            {"key": "a", "value": "w", "effect": "NoSchedule"},
            False,
            id="equal-other-value",
        ),
        pytest.param(
            {"key": "a", "value": "v"},
            {"key": "a", "value": "v", "effect": "NoExecute"},
            True,
            id="empty-operator-is-equal",
        ),
        pytest.param({"key": "a"}, {"key": "a", "effect": "NoSchedule"}, True, id="equal-empty-values"),
        pytest.param(
            {"key": "a", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "a", "effect": "NoExecute"},
            False,
            id="effect-mismatch",
        ),
        pytest.param(
            {"key": "a", "operator": "Exists", "effect": ""},
            {"key": "a", "effect": "PreferNoSchedule"},
            True,
            id="empty-effect-any",
        ),
        pytest.param(
            {"key": "a", "operator": "Gt", "value": "1"},
            {"key": "a", "value": "1", "effect": "NoSchedule"},
            False,
            id="unknown-operator",
        ),
        pytest.param(
            {"key": "a", "operator": "Exists"}, mk_taint("a", "NoSchedule"), True, id="dp-exists-any-effect"
        ),
        pytest.param(
            {"key": "a", "operator": "Equal", "value": "x"},
            mk_taint("a", "NoSchedule", "x"),
            True,
            id="dp-equal-value",
        ),
        pytest.param(
            {"key": "a", "value": "y"}, mk_taint("a", "NoSchedule", "x"), False, id="dp-other-value"
        ),
        pytest.param(
            {"key": "a", "operator": "Exists", "effect": "NoExecute"},
            mk_taint("a", "NoSchedule"),
            False,
            id="dp-other-effect",
        ),
        pytest.param({"operator": "Exists"}, mk_taint("b", "NoExecute"), True, id="dp-tolerate-everything"),
        pytest.param(
            {"key": "b", "operator": "Exists"}, mk_taint("a", "NoSchedule"), False, id="dp-other-key"
        ),
    ],
)
def test_tolerates(toleration: dict[str, Any], taint: dict[str, Any], expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


NS = {"key": "a", "effect": "NoSchedule"}
NE = {"key": "b", "value": "v", "effect": "NoExecute"}
PNS = {"key": "c", "effect": "PreferNoSchedule"}


@pytest.mark.parametrize(
    ("taints", "tolerations", "effects", "expected"),
    [
        pytest.param([], [], None, None, id="no-taints"),
        pytest.param([PNS, NS, NE], [], None, NS, id="first-filtered-in-node-order"),
        pytest.param([PNS], [], None, None, id="prefer-no-schedule-not-filtered"),
        pytest.param([NS, NE], [{"key": "a", "operator": "Exists"}], None, NE, id="skips-tolerated"),
        pytest.param([NS, NE], [{"operator": "Exists"}], None, None, id="all-tolerated"),
        pytest.param([NS, NE], [], ("NoExecute",), NE, id="effect-filter"),
        pytest.param([NS], [], ("NoExecute",), None, id="effect-filter-excludes"),
    ],
)
def test_find_untolerated_taint(taints, tolerations, effects, expected) -> None:
    args = () if effects is None else (effects,)
    assert find_untolerated_taint(taints, tolerations, *args) == expected


def test_tolerations_tolerate_any() -> None:
    assert tolerations_tolerate([{"key": "x", "operator": "Exists"}, {"key": "a"}], NS)
    assert not tolerations_tolerate([], NS)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param({"key": "k", "operator": "Exists"}, {"key": "k", "operator": "Exists"}, True, id="same"),
        pytest.param({"key": "k"}, {"key": "k", "operator": "Equal", "value": ""}, True, id="defaults"),
        pytest.param(
            {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5},
            {"key": "k", "operator": "Exists", "effect": "NoExecute"},
            True,
            id="seconds-ignored",
        ),
        pytest.param({"key": "k", "value": "1"}, {"key": "k", "value": "2"}, False, id="value"),
        pytest.param({"key": "k", "effect": "NoSchedule"}, {"key": "k"}, False, id="effect"),
        pytest.param({"key": "k", "operator": "Exists"}, {"key": "k"}, False, id="operator"),
    ],
)
def test_same_toleration(a, b, expected) -> None:
    assert same_toleration(a, b) is expected


def test_sorted_tolerations_orders_and_drops_empty_fields() -> None:
    given = [
        {"key": "b", "operator": "Exists", "value": None},
        {"key": "a", "operator": "Equal", "value": "2", "effect": ""},
        {"key": "a", "operator": "Equal", "value": "1"},
    ]
    assert sorted_tolerations(given) == [
        {"key": "a", "operator": "Equal", "value": "1"},
        {"key": "a", "operator": "Equal", "value": "2"},
        {"key": "b", "operator": "Exists"},
    ]
    assert sorted_tolerations(None) == []


P = "spec.nodeGroups[0].config.tolerations"


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        pytest.param([], [], id="none"),
        pytest.param(
            [
                {"operator": "Exists"},
                {"key": "k", "value": "v", "effect": "NoExecute", "tolerationSeconds": 5},
            ],
            [],
            id="valid",
        ),
        pytest.param(
            [{"key": "k", "operator": "Maybe"}],
            [f'{P}[0].operator: Unsupported value: "Maybe": supported values: "Equal", "Exists"'],
            id="operator",
        ),
        pytest.param(
            [{"key": "k", "effect": "Sometimes"}],
            [
                f'{P}[0].effect: Unsupported value: "Sometimes": '
                'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"'
            ],
            id="effect",
        ),
        pytest.param(
            [{"value": "v"}],
            [
                f'{P}[0].operator: Invalid value: "": operator must be Exists when `key` is empty, '
                'which means "match all values and all keys"'
            ],
            id="empty-key-needs-exists",
        ),
        pytest.param(
            [{"key": "k", "operator": "Exists", "value": "v"}],
            [
                f'{P}[0].operator: Invalid value: core.Toleration{{Key:"k", Operator:"Exists", Value:"v", '
                "Effect:\"\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'"
            ],
            id="exists-with-value",
        ),
        pytest.param(
            [{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}],
            [
                f'{P}[0].effect: Invalid value: "NoSchedule": '
                "effect must be 'NoExecute' when `tolerationSeconds` is set"
            ],
            id="seconds-need-no-execute",
        ),
        pytest.param(
            [{"operator": "Exists"}, {"key": "k", "operator": "Maybe", "effect": "Never"}],
            [
                f'{P}[1].operator: Unsupported value: "Maybe": supported values: "Equal", "Exists"',
                f'{P}[1].effect: Unsupported value: "Never": '
                'supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
            ],
            id="all-errors-in-order",
        ),
        pytest.param(
            [
                {
                    "key": "-k",
                    "operator": "Exists",
                    "value": "v",
                    "effect": "NoSchedule",
                    "tolerationSeconds": 5,
                }
            ],
            [
                f'{P}[0].key: Invalid value: "-k": name part must consist of alphanumeric characters, '
                "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                "'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                f'{P}[0].effect: Invalid value: "NoSchedule": '
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
                f'{P}[0].operator: Invalid value: core.Toleration{{Key:"-k", Operator:"Exists", Value:"v", '
                'Effect:"NoSchedule", TolerationSeconds:(*int64)(0xc000000000)}: '
                "value must be empty when `operator` is 'Exists'",
            ],
            id="upstream-order-key-seconds-operator",
        ),
        pytest.param(
            [{"key": "k", "value": "not a value"}],
            [
                f'{P}[0].operator: Invalid value: "not a value": a valid label must be an empty string or '
                "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
                "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ],
            id="equal-value-is-a-label-value",
        ),
        pytest.param(
            [None],
            [
                f'{P}[0].operator: Invalid value: "": operator must be Exists when `key` is empty, '
                'which means "match all values and all keys"'
            ],
            id="null-entry-is-the-zero-toleration",
        ),
    ],
)
def test_tolerations_errors(tolerations: list[dict[str, Any]], expected: list[str]) -> None:
    assert tolerations_errors(tolerations, P) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("k:NoSchedule", {"key": "k", "effect": "NoSchedule"}, id="no-value"),
        pytest.param("k=v:NoExecute", {"key": "k", "value": "v", "effect": "NoExecute"}, id="value"),
        pytest.param(
            "example.com/k=v:PreferNoSchedule",
            {"key": "example.com/k", "value": "v", "effect": "PreferNoSchedule"},
            id="prefixed",
        ),
    ],
)
def test_parse_taint(text: str, expected: dict[str, str]) -> None:
    assert parse_taint(text) == expected


@pytest.mark.parametrize("text", ["k", "k:Never", "k=v"])
def test_parse_taint_refuses(text: str) -> None:
    with pytest.raises(ValueError, match=f"^invalid taint spec: {text}$"):
        parse_taint(text)


@pytest.mark.parametrize(
    ("taints", "taint", "expected", "updated"),
    [
        pytest.param([], NS, [NS], True, id="append"),
        pytest.param([NS, NE], NS, [NS, NE], False, id="same-unchanged"),
        pytest.param([NS, NE], {**NE, "value": "w"}, [NS, {**NE, "value": "w"}], True, id="replace-value"),
        pytest.param(
            [NS], {**NS, "effect": "NoExecute"}, [NS, {**NS, "effect": "NoExecute"}], True, id="other-effect"
        ),
    ],
)
def test_add_or_update_taint(taints, taint, expected, updated) -> None:
    assert add_or_update_taint(taints, taint) == (expected, updated)


@pytest.mark.parametrize(
    ("taints", "taint", "expected", "removed"),
    [
        pytest.param([NS, NE], {"key": "b", "effect": "NoExecute"}, [NS], True, id="value-ignored"),
        pytest.param([NS, NE], {"key": "a", "effect": "NoExecute"}, [NS, NE], False, id="other-effect"),
        pytest.param([], NS, [], False, id="empty"),
    ],
)
def test_remove_taint(taints, taint, expected, removed) -> None:
    assert remove_taint(taints, taint) == (expected, removed)


@pytest.mark.parametrize(
    ("toleration", "field", "reason"),
    [
        pytest.param(
            {"key": "k", "operator": "Exists", "value": "v"}, "operator", "FieldValueInvalid", id="invalid"
        ),
        pytest.param(
            {"key": "k", "operator": "Maybe"}, "operator", "FieldValueNotSupported", id="not-supported"
        ),
        pytest.param({"key": "k", "effect": "Never"}, "effect", "FieldValueNotSupported", id="effect"),
    ],
)
def test_toleration_errors_carry_the_status_cause(
    toleration: dict[str, Any], field: str, reason: str
) -> None:
    (error,) = toleration_errors([toleration], "spec.tolerations")
    assert (error.field, error.reason) == (f"spec.tolerations[0].{field}", reason)
    assert str(error) == f"{error.field}: {error.body()}"
