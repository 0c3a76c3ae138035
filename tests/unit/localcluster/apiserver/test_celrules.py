"""CEL rules of CRD schemas: which values break which rule, and the causes upstream gives for them."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import celpy
import lark
import pytest
from celpy import celparser

from nrop.api.status import Cause
from nrop.localcluster.apiserver.crd import celrules
from nrop.localcluster.apiserver.crd.celrules import BLOCKING_MESSAGE, validate_rules

SINGLETON = "This is a singleton resource and the object name must be 'numaresourcesoperator'."
SCHEMA: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-validations": [
        {
            "rule": "has(self.metadata.name) && self.metadata.name == 'numaresourcesoperator'",
            "message": SINGLETON,
        }
    ],
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.min) || !has(self.max) || self.min <= self.max",
                    "fieldPath": ".min",
                    "reason": "FieldValueForbidden",
                    "message": "min must not exceed max",
                }
            ],
            "properties": {
                "min": {"type": "integer"},
                "max": {"type": "integer"},
                "replicas": {
                    "type": "integer",
                    "x-kubernetes-validations": [
                        {"rule": "self <= 3", "messageExpression": "'at most 3, not ' + string(self)"}
                    ],
                },
                "mode": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]},
                "pools": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "x-kubernetes-validations": [
                            {"rule": "self.name.startsWith('p')", "message": "bad pool"}
                        ],
                    },
                },
                "labels": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "string",
                        "x-kubernetes-validations": [
                            {
                                "rule": "size(self) < 4",
                                "reason": "FieldValueRequired",
                                "message": "short values only",
                            }
                        ],
                    },
                },
            },
        }
    },
}
NAME = {"name": "numaresourcesoperator"}


def invalid(field: str, type_name: str, message: str) -> Cause:
    return Cause("FieldValueInvalid", f'Invalid value: "{type_name}": {message}', field)


@pytest.mark.parametrize(
    ("obj", "old", "expected"),
    [
        pytest.param({"metadata": NAME, "spec": {"replicas": 3}}, None, [], id="valid"),
        pytest.param(
            {"metadata": {"name": "x"}}, None, [invalid("<nil>", "object", SINGLETON)], id="root-rule"
        ),
        pytest.param({"metadata": {}}, None, [invalid("<nil>", "object", SINGLETON)], id="root-has-guard"),
        pytest.param(
            {"metadata": NAME, "spec": {"replicas": 7}},
            None,
            [invalid("spec.replicas", "integer", "at most 3, not 7")],
            id="message-expression",
        ),
        pytest.param(
            {"metadata": NAME, "spec": {"min": 3, "max": 2}},
            None,
            [Cause("FieldValueForbidden", "Forbidden: min must not exceed max", "spec.min")],
            id="field-path-reason",
        ),
        pytest.param(
            {"metadata": NAME, "spec": {"mode": "b"}}, None, [], id="transition-rule-skipped-on-create"
        ),
        pytest.param(
            {"metadata": NAME, "spec": {"mode": "b"}},
            {"metadata": NAME, "spec": {"mode": "a"}},
            [invalid("spec.mode", "string", "failed rule: self == oldSelf")],
            id="transition-rule-on-update",
        ),
        pytest.param(
            {"metadata": NAME, "spec": {"mode": "b"}},
            {"metadata": NAME, "spec": {}},
            [],
            id="transition-no-old-value",
        ),
        pytest.param(
            {"metadata": NAME, "spec": {"pools": [{"name": "p1"}, {"name": "q"}]}},
            None,
            [invalid("spec.pools[1]", "object", "bad pool")],
            id="list-items",
        ),
        pytest.param(
            {"metadata": NAME, "spec": {"labels": {"a": "ok", "b": "toolong"}}},
            None,
            [Cause("FieldValueRequired", "Required value: short values only", "spec.labels.b")],
            id="map-values",
        ),
        pytest.param(
            {"metadata": NAME, "spec": {"replicas": "three"}},
            None,
            [invalid("spec.replicas", "integer", "at most 3, not three")],
            id="evaluation-error-fails-the-rule",
        ),
    ],
)
def test_rules(obj: dict[str, Any], old: dict[str, Any] | None, expected: list[Cause]) -> None:
    assert validate_rules(SCHEMA, obj, old, []) == expected


def test_type_errors_block_the_rules() -> None:
    prior = [
        Cause(
            "FieldValueTypeInvalid", 'Invalid value: "string": spec.replicas in body must be of type integer'
        )
    ]
    assert validate_rules(SCHEMA, {"metadata": {"name": "x"}}, None, prior) == [
        invalid("<nil>", "object", BLOCKING_MESSAGE)
    ]


def test_schema_without_rules_is_not_walked() -> None:
    assert validate_rules({"type": "object"}, {"anything": [1, 2]}, None, []) == []


def test_celpys_parser_tables_are_cached_and_a_broken_cache_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(celparser.CELParser, "CEL_PARSER", None)
    celrules._environment()
    (cache,) = (tmp_path / "nrop").iterdir()
    assert stat.S_IMODE((tmp_path / "nrop").stat().st_mode) == 0o700  # a pickle: only this user writes there
    written = cache.read_bytes()
    assert celparser.Lark is lark.Lark  # celpy's module is left as it was

    for broken in (written[: len(written) // 2], b"not a cache\n"):
        cache.write_bytes(broken)
        monkeypatch.setattr(celparser.CELParser, "CEL_PARSER", None)
        assert _evaluates(celrules._environment())
        rewritten = cache.read_bytes()  # analysed again and written whole (pickles differ run to run)
        assert rewritten != broken and rewritten.partition(b"\n")[0] == written.partition(b"\n")[0]


def test_without_a_writable_cache_directory_the_tables_are_analysed_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(celparser.CELParser, "CEL_PARSER", None)
    assert celrules._parser_cache() is False
    assert _evaluates(celrules._environment())


def _evaluates(env: celpy.Environment) -> bool:
    program = env.program(env.compile("self.name == 'numaresourcesoperator'"))
    return bool(program.evaluate({"self": celpy.json_to_cel({"name": "numaresourcesoperator"})}))
