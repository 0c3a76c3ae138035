"""Label selectors (nrop.api.selectors): grammar, messages, dict bodies, matching."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrop.api.selectors import (
    EVERYTHING,
    NOTHING,
    SelectorError,
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_selector_from_dict,
    label_value_errors,
    matches,
    parse_label_selector,
    qualified_name_errors,
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
    with pytest.raises(SelectorError) as info:
        parse_label_selector(text)
    assert message in str(info.value)


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
    with pytest.raises(SelectorError) as info:
        label_selector_from_dict(body)
    assert message in str(info.value)


_label_part = st.from_regex(r"[a-z0-9]([a-z0-9.-]{0,10}[a-z0-9])?", fullmatch=True)


@given(st.dictionaries(_label_part, _label_part, max_size=5))
def test_selector_built_from_labels_matches_them(labels: dict[str, str]) -> None:
    text = ",".join(f"{k}={v}" for k, v in labels.items())
    selector = parse_label_selector(text)
    assert selector.matches(labels)
    assert parse_label_selector(str(selector)) == selector


# --- matches(): a selector body against labels (RBAC aggregation, MCP selection, the suite) ----


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        pytest.param({}, {}, True, id="empty-selects-all"),
        pytest.param({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True, id="labels-subset"),
        pytest.param({"matchLabels": {"a": "1"}}, {"a": "2"}, False, id="labels-value-differs"),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]},
            {"a": "2"},
            True,
            id="in",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False, id="in-absent"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
            {},
            True,
            id="notin-absent",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
            {"a": "1"},
            False,
            id="notin-present",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True, id="exists"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]},
            {"a": ""},
            False,
            id="doesnotexist",
        ),
        pytest.param(
            {"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]},
            {"a": "1"},
            False,
            id="labels-and-expressions",
        ),
        pytest.param(None, {}, False, id="absent-selects-nothing"),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            {"a": "2"},
            False,
            id="refused-operator-selects-nothing",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            {"a": ""},
            False,
            id="refused-empty-in-selects-nothing",
        ),
        pytest.param({"matchLabels": {"a": "1"}}, None, False, id="no-labels"),
        pytest.param({}, None, True, id="empty-selects-unlabelled"),
    ],
)
def test_matches(selector: dict[str, Any] | None, labels: dict[str, str] | None, expected: bool) -> None:
    assert matches(selector, labels) is expected


# --- errors naming the field path (the operator's machineConfigPoolSelector) -----------------

PATH = "spec.nodeGroups[0].machineConfigPoolSelector"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Maybe"}]},
            f'{PATH}.matchExpressions[0].operator: "Maybe" is not a valid label selector operator',
            id="operator",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "Exists"}, {"key": "a", "operator": "In"}]},
            f"{PATH}.matchExpressions[1].values: Invalid value: []: "
            "for 'in', 'notin' operators, values set can't be empty",
            id="in-without-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist", "values": ["x"]}]},
            f"{PATH}.matchExpressions[0].values: Invalid value: "
            "values set must be empty for exists and does not exist",
            id="exists-with-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "", "operator": "Exists"}]},
            f'{PATH}.matchExpressions[0].key: Invalid value: "": name part must be non-empty; ',
            id="empty-key",
        ),
        pytest.param(
            {"matchLabels": {"a": "bad value"}},
            f'{PATH}.matchLabels.values[0][a]: Invalid value: "bad value"',
            id="match-labels-value",
        ),
    ],
)
def test_label_selector_from_dict_errors_name_the_path(body: dict[str, Any], message: str) -> None:
    with pytest.raises(SelectorError) as info:
        label_selector_from_dict(body, path=PATH)
    assert str(info.value).startswith(message)


_DNS1123_LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
    "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1035_LABEL = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


@pytest.mark.parametrize(
    ("check", "value", "errors"),
    [
        pytest.param(dns1123_label_errors, "my-name", [], id="label"),
        pytest.param(dns1123_label_errors, "1abc", [], id="label-digit-first"),
        pytest.param(dns1123_label_errors, "a.b", [_DNS1123_LABEL], id="label-dot"),
        pytest.param(
            dns1123_label_errors, "a" * 64, ["must be no more than 63 characters"], id="label-too-long"
        ),
        pytest.param(dns1035_label_errors, "abc-123", [], id="1035"),
        pytest.param(dns1035_label_errors, "1abc", [_DNS1035_LABEL], id="1035-digit-first"),
        pytest.param(dns1123_subdomain_errors, "example.com", [], id="subdomain"),
        # Go's regexp anchors at the very end: a trailing newline is no match (Python's "$" would be)
        pytest.param(dns1123_label_errors, "abc\n", [_DNS1123_LABEL], id="label-newline"),
        pytest.param(dns1035_label_errors, "abc\n", [_DNS1035_LABEL], id="1035-newline"),
    ],
)
def test_dns_names(check: Any, value: str, errors: list[str]) -> None:
    assert check(value) == errors


@pytest.mark.parametrize("value", ["foo\n", "example.com\n"])
def test_a_trailing_newline_is_no_name_value_or_subdomain(value: str) -> None:
    assert qualified_name_errors(value)
    assert label_value_errors(value)
    assert dns1123_subdomain_errors(value)
