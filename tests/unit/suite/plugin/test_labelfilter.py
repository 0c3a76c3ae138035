"""Ginkgo label-filter grammar: a table of filters, label sets and expected verdicts, and the syntax errors."""

from __future__ import annotations

import pytest

from nrop.suite.plugin.labelfilter import LabelFilterError, parse

TMPOL_T0 = ("e2e:serial", "Serial", "tier0", "feature:wlplacement", "feature:tmpol", "tmscope:cnt")
CACHE_T1 = ("e2e:serial", "tier1", "feature:cache", "feature:stall", "podburst")
UNTIERED = ("e2e:serial", "feature:netpols")

CASES = [
    # (filter, labels, expected)
    ("", UNTIERED, True),
    ("   ", UNTIERED, True),
    ("tier0", TMPOL_T0, True),
    ("tier0", CACHE_T1, False),
    ("TIER0", TMPOL_T0, True),
    ("serial", TMPOL_T0, True),
    ("feature:tmpol", TMPOL_T0, True),
    ("feature:TMPOL", TMPOL_T0, True),
    ("feature:tmpol", CACHE_T1, False),
    ("!tier0", TMPOL_T0, False),
    ("!tier0", CACHE_T1, True),
    ("!!tier0", TMPOL_T0, True),
    ("tier0 || tier1", CACHE_T1, True),
    ("tier0, tier1", CACHE_T1, True),
    ("tier0,tier1", UNTIERED, False),
    ("tier0 && feature:tmpol", TMPOL_T0, True),
    ("tier0 && feature:cache", TMPOL_T0, False),
    ("tier0 || tier1 && feature:netpols", TMPOL_T0, True),
    ("(tier0 || tier1) && feature:netpols", TMPOL_T0, False),
    ("!tier0 && !tier1", UNTIERED, True),
    ("!(tier0 || tier1)", CACHE_T1, False),
    ("/^tier[01]$/", CACHE_T1, True),
    ("/^tier[01]$/", UNTIERED, False),
    ("/pod/", CACHE_T1, True),
    ("/TIER/", TMPOL_T0, False),
    ("feature: containsAny {tmpol, cache}", TMPOL_T0, True),
    ("feature: containsAny {tmpol, cache}", CACHE_T1, True),
    ("feature: containsAny {tmpol, cache}", UNTIERED, False),
    ("feature: containsAny tmpol", TMPOL_T0, True),
    ("feature: containsAll {cache, stall}", CACHE_T1, True),
    ("feature: containsAll {cache, tmpol}", CACHE_T1, False),
    ("feature: consistsOf {stall, cache}", CACHE_T1, True),
    ("feature: consistsOf {cache}", CACHE_T1, False),
    ("feature: isSubsetOf {cache, stall, tmpol}", CACHE_T1, True),
    ("feature: isSubsetOf {cache}", CACHE_T1, False),
    ("feature: isSubsetOf {cache}", ("tier0",), True),
    ("feature: isEmpty", ("tier0", "tmscope:cnt"), True),
    ("feature: isEmpty", CACHE_T1, False),
    ("Feature: CONTAINSANY {TMPOL}", TMPOL_T0, True),
    ("tier0 && feature: containsAny {tmpol} && !tmscope:pod", TMPOL_T0, True),
    ("!feature: containsAny {tmpol}", TMPOL_T0, False),
    ("tmscope: containsAny {cnt, container}", TMPOL_T0, True),
]


@pytest.mark.parametrize(
    ("text", "labels", "expected"), CASES, ids=[f"{c[0]!r}-{i}" for i, c in enumerate(CASES)]
)
def test_filter_verdict(text: str, labels: tuple[str, ...], expected: bool) -> None:
    assert parse(text)(labels) is expected


ERRORS = [
    ("tier0 & tier1", "Invalid token '&'.  Did you mean '&&'?"),
    ("tier0 | tier1", "Invalid token '|'.  Did you mean '||'?"),
    ("tier0 tier1 (x)", "Found two adjacent labels"),
    ("(tier0", "Mismatched '(' - could not find matching ')'."),
    ("tier0)", "Mismatched ')' - could not find matching '('."),
    ("()", "Found empty '()' group."),
    ("&& tier0", "missing left hand operand"),
    ("tier0 &&", "Unexpected EOF."),
    ("/[/", "RegExp compilation error"),
    ("feature: containsSome {a}", "Invalid set operation 'containsSome'."),
    ("feature: containsAny", "Set operation 'containsAny' requires an argument."),
    ("feature: containsAny {a", "Missing closing '}' in set operation argument?"),
    ("feature: containsAny {a,,b}", "Empty label value in set operation argument."),
    ("feature: isEmpty {a}", "isEmpty does not take arguments, was passed 'a'."),
    ("feature: containsAny /x/", "Set operations do not support regular expressions."),
    ("feature containsAny {a}", "did not provide a set key.  Did you forget the ':'?"),
]


@pytest.mark.parametrize(("text", "reason"), ERRORS, ids=[e[0] for e in ERRORS])
def test_syntax_errors_name_the_problem(text: str, reason: str) -> None:
    with pytest.raises(LabelFilterError) as excinfo:
        parse(text)
    assert reason in str(excinfo.value)
    assert repr(text) in str(excinfo.value)
