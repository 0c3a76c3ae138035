"""CEL validation rules of CRD schemas (``x-kubernetes-validations``), evaluated on custom resource writes.

apiextensions-apiserver evaluates, at every schema node carrying rules, each rule with
``self`` bound to the value at that node (and ``oldSelf`` to the previous value on
updates; a transition rule, one that mentions ``oldSelf``, is skipped when there is no
previous value). A rule that evaluates to false, or fails to evaluate, gives one field
cause shaped as upstream's:

* the field is the node's path (``<nil>`` at the root; the rule's ``fieldPath`` appended);
* ``reason`` (default ``FieldValueInvalid``) picks the cause type; an invalid value is
  rendered as the schema type (``Invalid value: "object": <message>``);
* the text is ``messageExpression`` (when it evaluates to a string), else ``message``, else
  ``failed rule: <rule>``.

Rules are compiled with ``cel-python`` (``celpy``) once per rule text. Pure but for one
cache: celpy's parser tables, kept by Lark in the user's cache directory (:func:`_environment`).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import celpy
from celpy import celparser

from nrop.api.status import Cause
from nrop.localcluster.apiserver.crd.structural import additional_of, child_path, items_of, props_of

__all__ = ["BLOCKING_MESSAGE", "ROOT", "validate_rules"]

log = logging.getLogger(__name__)

#: How upstream names the root of an object in field errors (a nil field path).
ROOT = "<nil>"
#: Upstream's cause when schema errors keep the rules from being evaluated.
BLOCKING_MESSAGE = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)
_BLOCKING_TYPES = frozenset({"FieldValueTypeInvalid", "FieldValueNotSupported"})


def _parser_cache() -> str | bool:
    """The file Lark keeps celpy's parser tables in, or ``False`` for none.

    The file is a pickle, which runs code when loaded, so it lives in a directory only this
    user can write (``$XDG_CACHE_HOME/nrop``, else ``~/.cache/nrop``), never in a shared
    temporary directory where another user could put one under the expected name.
    """
    try:
        home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        directory = Path(home) / "nrop"
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except (OSError, RuntimeError) as err:  # no home, or nowhere writable: analyse every time
        log.debug("no cache for celpy's parser tables: %s", err)
        return False
    return str(directory / f"celpy-parser-py{sys.version_info[0]}{sys.version_info[1]}.lark")


def _environment() -> celpy.Environment:
    """celpy's environment, its LALR parser tables loaded from Lark's cache when it has them.

    celpy analyses its grammar when the first environment is made, about 0.3 CPU-s of each
    cluster start. Lark can keep that analysis in a file (:func:`_parser_cache`), marked with
    the grammar, its options and Lark's and Python's versions; a missing, stale or unreadable
    file is analysed again and rewritten. celpy does not pass Lark's ``cache`` option, so it is
    added to this one call.
    """
    lark = celparser.Lark
    celparser.Lark = functools.partial(lark, cache=_parser_cache())
    try:
        return celpy.Environment()
    finally:
        celparser.Lark = lark


_ENV = _environment()


@dataclass(frozen=True)
class _Node:
    path: str
    schema: dict[str, Any]
    value: Any
    old: Any
    has_old: bool


def validate_rules(schema: dict[str, Any], obj: Any, old: Any | None, prior: list[Cause]) -> list[Cause]:
    """The causes of the rules ``obj`` breaks (``old``: the stored object on updates, else None).

    ``prior`` are the schema's own causes: type errors block rule evaluation, as upstream.
    """
    if not _has_rules(schema):
        return []
    if any(c.reason in _BLOCKING_TYPES for c in prior):
        return [Cause("FieldValueInvalid", f'Invalid value: "object": {BLOCKING_MESSAGE}', ROOT)]
    causes: list[Cause] = []
    for node in _walk(_Node("", schema, obj, old, old is not None)):
        for rule in node.schema.get("x-kubernetes-validations") or ():
            cause = _check(rule, node)
            if cause is not None:
                causes.append(cause)
    return causes


def _has_rules(s: Any) -> bool:
    if not isinstance(s, dict):
        return False
    if s.get("x-kubernetes-validations"):
        return True
    return any(_has_rules(c) for c in (*props_of(s).values(), items_of(s), additional_of(s)[1]))


def _walk(node: _Node) -> Iterator[_Node]:
    """Every present value with its schema, parents first."""
    yield node
    s, value = node.schema, node.value
    if isinstance(value, dict):
        props = props_of(s)
        _, extra = additional_of(s)
        old = node.old if isinstance(node.old, dict) else {}
        for key, child in value.items():
            sub = props.get(key, extra)
            if isinstance(sub, dict):
                yield from _walk(
                    _Node(child_path(node.path, key), sub, child, old.get(key), node.has_old and key in old)
                )
    elif isinstance(value, list):
        sub = items_of(s)
        if sub is None:
            return
        old_list = node.old if isinstance(node.old, list) else []
        for i, child in enumerate(value):
            # Upstream correlates list items only for map/set lists; positional is close enough here.
            has_old = node.has_old and i < len(old_list)
            yield from _walk(
                _Node(f"{node.path}[{i}]", sub, child, old_list[i] if has_old else None, has_old)
            )


@functools.lru_cache(maxsize=512)
def _program(expression: str) -> celpy.Runner | None:
    try:
        return _ENV.program(_ENV.compile(expression))
    except Exception as exc:  # celpy raises its own parser/compiler errors
        log.warning("CEL expression %r does not compile: %s", expression, exc)
        return None


def _evaluate(expression: str, activation: dict[str, Any]) -> Any:
    program = _program(expression)
    if program is None:
        return None
    try:
        result = program.evaluate(activation)
    except Exception as exc:  # an evaluation error (no such key, bad types) fails the rule
        return exc
    return result


def _check(rule: dict[str, Any], node: _Node) -> Cause | None:
    text = str(rule.get("rule") or "")
    transition = "oldSelf" in text
    if transition and not node.has_old:
        return None
    activation = {"self": celpy.json_to_cel(node.value)}
    if transition:
        activation["oldSelf"] = celpy.json_to_cel(node.old)
    result = _evaluate(text, activation)
    if isinstance(result, celpy.celtypes.BoolType | bool) and bool(result):
        return None
    message = _message(rule, activation)
    path = node.path or ""
    field_path = str(rule.get("fieldPath") or "")
    if field_path:
        path = (path + field_path) if field_path.startswith((".", "[")) else child_path(path, field_path)
        path = path.lstrip(".")
    return _cause(str(rule.get("reason") or "FieldValueInvalid"), path or ROOT, _type_name(node), message)


def _message(rule: dict[str, Any], activation: dict[str, Any]) -> str:
    expression = rule.get("messageExpression")
    if expression:
        value = _evaluate(str(expression), activation)
        if isinstance(value, str) and value.strip():
            return str(value)
    if rule.get("message"):
        return str(rule["message"])
    return f"failed rule: {rule.get('rule', '')}"


def _type_name(node: _Node) -> str:
    declared = node.schema.get("type")
    if isinstance(declared, str) and declared:
        return declared
    if isinstance(node.value, dict):
        return "object"
    if isinstance(node.value, list):
        return "array"
    return "string" if isinstance(node.value, str) else "object"


def _cause(reason: str, path: str, type_name: str, message: str) -> Cause:
    if reason == "FieldValueForbidden":
        return Cause(reason, f"Forbidden: {message}", path)
    if reason == "FieldValueRequired":
        return Cause(reason, f"Required value: {message}", path)
    if reason == "FieldValueDuplicate":
        return Cause(reason, f'Duplicate value: "{type_name}"', path)
    return Cause("FieldValueInvalid", f'Invalid value: "{type_name}": {message}', path)
