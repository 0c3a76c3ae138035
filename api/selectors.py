"""Label selectors, the one copy of apimachinery's rules: syntax, validation messages and matching.

This module owns what ``labels.Parse`` (the ``labelSelector=`` string grammar),
``labels.NewRequirement`` (key and value syntax, operator arity, with upstream's exact
messages) and ``metav1.LabelSelectorAsSelector`` (a ``metav1.LabelSelector`` body:
``matchLabels`` and ``matchExpressions`` with In, NotIn, Exists, DoesNotExist) decide.
The API server's lists and watches, the embedded controllers, RBAC aggregation, the
operator's ``machineConfigPoolSelector`` and the suite all share it.  It is pure:
strings and dicts in, booleans and :class:`SelectorError` out.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .fielderrors import go_quote

__all__ = [
    "EVERYTHING",
    "NOTHING",
    "LabelSelector",
    "Operator",
    "Requirement",
    "SelectorError",
    "dns1035_label_errors",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "label_selector_from_dict",
    "label_value_errors",
    "matches",
    "parse_label_selector",
    "qualified_name_errors",
]


class SelectorError(ValueError):
    """A selector apimachinery refuses; the text is upstream's error message."""


class Operator(enum.StrEnum):
    """Label requirement operators, spelled as ``selection.Operator`` spells them."""

    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


# --- label key and value syntax (apimachinery util/validation) -------------------------------

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile(_NAME_FMT)
_VALUE_FMT = f"({_NAME_FMT})?"
_VALUE_RE = re.compile(_VALUE_FMT)
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_FMT = _DNS_LABEL_FMT + "(\\." + _DNS_LABEL_FMT + ")*"
_DNS_SUBDOMAIN_RE = re.compile(_DNS_SUBDOMAIN_FMT)
_MAX_NAME = 63
_MAX_SUBDOMAIN = 253
_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS_LABEL_RE = re.compile(_DNS_LABEL_FMT)
_DNS_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL_FMT)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    # Same shape as validation.RegexError, double spaces included, so messages compare equal.
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def qualified_name_errors(key: str) -> list[str]:
    """What makes ``key`` no qualified name (``[prefix/]name``, apimachinery ``IsQualifiedName``)."""
    parts = key.split("/")
    errs: list[str] = []
    if len(parts) > 2:
        return [
            "a qualified name "
            + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            if len(prefix) > _MAX_SUBDOMAIN:
                errs.append(f"prefix part must be no more than {_MAX_SUBDOMAIN} characters")
            if not _DNS_SUBDOMAIN_RE.fullmatch(prefix):
                errs.append("prefix part " + _regex_error(_SUBDOMAIN_MSG, _DNS_SUBDOMAIN_FMT, "example.com"))
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > _MAX_NAME:
        errs.append(f"name part must be no more than {_MAX_NAME} characters")
    if not _NAME_RE.fullmatch(name):
        errs.append("name part " + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """What makes ``value`` no lowercase RFC 1123 subdomain (apimachinery ``IsDNS1123Subdomain``)."""
    errs: list[str] = []
    if len(value) > _MAX_SUBDOMAIN:
        errs.append(f"must be no more than {_MAX_SUBDOMAIN} characters")
    if not _DNS_SUBDOMAIN_RE.fullmatch(value):
        errs.append(_regex_error(_SUBDOMAIN_MSG, _DNS_SUBDOMAIN_FMT, "example.com"))
    return errs


def dns1123_label_errors(value: str) -> list[str]:
    """What makes ``value`` no lowercase RFC 1123 label (apimachinery ``IsDNS1123Label``)."""
    errs: list[str] = []
    if len(value) > _MAX_NAME:
        errs.append(f"must be no more than {_MAX_NAME} characters")
    if not _DNS_LABEL_RE.fullmatch(value):
        errs.append(_regex_error(_DNS_LABEL_MSG, _DNS_LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1035_label_errors(value: str) -> list[str]:
    """What makes ``value`` no DNS-1035 label (apimachinery ``IsDNS1035Label``)."""
    errs: list[str] = []
    if len(value) > _MAX_NAME:
        errs.append(f"must be no more than {_MAX_NAME} characters")
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(_regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def label_value_errors(value: str) -> list[str]:
    """What makes ``value`` no label value (apimachinery ``IsValidLabelValue``)."""
    errs: list[str] = []
    if len(value) > _MAX_NAME:
        errs.append(f"must be no more than {_MAX_NAME} characters")
    if not _VALUE_RE.fullmatch(value):
        errs.append(_regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _invalid(path: str, value: str, detail: str) -> str:
    """A ``field.Invalid`` error rendered as text (``path: Invalid value: "v": detail``)."""
    return f"{path}: Invalid value: {go_quote(value)}: {detail}"


def _requirement_errors(key: str, op: Operator, values: tuple[str, ...]) -> list[str]:
    """What ``labels.NewRequirement`` rejects, in its order (key, arity, each value)."""
    errs: list[str] = []
    if key_errs := qualified_name_errors(key):
        errs.append(_invalid("key", key, "; ".join(key_errs)))
    if op in (Operator.IN, Operator.NOT_IN) and not values:
        errs.append("values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty")
    if op in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS) and len(values) != 1:
        errs.append("values: Invalid value: exact-match compatibility requires one single value")
    if op in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and values:
        errs.append("values: Invalid value: values set must be empty for exists and does not exist")
    if op in (Operator.GREATER_THAN, Operator.LESS_THAN):
        if len(values) != 1:
            errs.append("values: Invalid value: for 'Gt', 'Lt' operators, exactly one value is required")
        for i, v in enumerate(values):
            if _to_int(v) is None:
                errs.append(
                    _invalid(f"values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer")
                )
    for i, v in enumerate(values):
        if value_errs := label_value_errors(v):
            errs.append(_invalid(f"values[{i}][{key}]", v, "; ".join(value_errs)))
    return errs


def _at(where: str) -> str:
    return f"{where}." if where else ""


def _aggregate(errs: list[str]) -> str:
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


def _to_int(text: str) -> int | None:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


# --- label selectors ------------------------------------------------------------------------


@dataclass(frozen=True)
class Requirement:
    """One ANDed term of a label selector; ``values`` are sorted and de-duplicated."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    @classmethod
    def make(
        cls, key: str, operator: Operator, values: Iterable[str] = (), *, where: str = ""
    ) -> Requirement:
        """Validate like ``labels.NewRequirement``; raise :class:`SelectorError` on bad syntax.

        ``where`` (e.g. ``spec.selector.matchExpressions[0]``) prefixes each error's field path.
        """
        vals = tuple(values)
        if not isinstance(key, str) or not all(isinstance(v, str) for v in vals):
            raise SelectorError(f"{_at(where)}label selector keys and values must be strings: {key!r}")
        if errs := _requirement_errors(key, operator, vals):
            raise SelectorError(_aggregate([_at(where) + e for e in errs]))
        return cls(key, operator, tuple(sorted(set(vals))))

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        op = self.operator
        if op in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
            return has and labels[self.key] in self.values
        if op in (Operator.NOT_IN, Operator.NOT_EQUALS):
            # Objects lacking the key match a negative requirement, as upstream.
            return not has or labels[self.key] not in self.values
        if op is Operator.EXISTS:
            return has
        if op is Operator.DOES_NOT_EXIST:
            return not has
        if not has or len(self.values) != 1:
            return False
        actual, bound = _to_int(labels[self.key]), _to_int(self.values[0])
        if actual is None or bound is None:
            return False
        return actual > bound if op is Operator.GREATER_THAN else actual < bound

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key
        if op is Operator.DOES_NOT_EXIST:
            return f"!{self.key}"
        if op in (Operator.IN, Operator.NOT_IN):
            return f"{self.key} {op.value} ({','.join(self.values)})"
        symbol = {Operator.GREATER_THAN: ">", Operator.LESS_THAN: "<"}.get(op, op.value)
        return f"{self.key}{symbol}{self.values[0] if self.values else ''}"


@dataclass(frozen=True)
class LabelSelector:
    """ANDed requirements; no requirements matches everything, ``nothing`` matches no object."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """True when the selector matches every object (the empty string, or ``{}``)."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        present = labels or {}
        return all(r.matches(present) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(nothing=True)

_SPECIAL = frozenset("=!(),<>")
_WHITESPACE = frozenset(" \t\r\n")
_SYMBOLS = frozenset({"!", "!=", "(", ")", ",", "<", "=", "==", ">"})
_KEYWORDS = frozenset({"in", "notin"})
_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
_END = ""  # literal of the end-of-string token


@dataclass(frozen=True)
class _Token:
    kind: str  # "id", "end", "error", a symbol ("!=", "(", ...) or a keyword ("in", "notin")
    text: str


def _lex(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _WHITESPACE:
            i += 1
        if i >= n:
            tokens.append(_Token("end", _END))
            return tokens
        if text[i] in _SPECIAL:
            # Longest run of special characters that still forms a symbol (``==`` over ``=``).
            j, best = i, ""
            while j < n and text[j] in _SPECIAL:
                if text[i : j + 1] in _SYMBOLS:
                    best = text[i : j + 1]
                elif best:
                    break
                j += 1
            if not best:
                tokens.append(_Token("error", f"error expected: keyword found '{text[i:j]}'"))
                i = j
                continue
            tokens.append(_Token(best, best))
            i += len(best)
            continue
        j = i
        while j < n and text[j] not in _SPECIAL and text[j] not in _WHITESPACE:
            j += 1
        word = text[i:j]
        tokens.append(_Token(word if word in _KEYWORDS else "id", word))
        i = j


class _Parser:
    """Recursive descent over the token list, mirroring ``labels.Parser`` and its messages."""

    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.pos = 0

    def _peek(self, *, values: bool = True) -> _Token:
        tok = self.tokens[self.pos]
        # In value position the keywords ``in``/``notin`` are plain identifiers.
        return _Token("id", tok.text) if values and tok.kind in _KEYWORDS else tok

    def _next(self, *, values: bool = True) -> _Token:
        tok = self._peek(values=values)
        if self.pos < len(self.tokens) - 1:
            self.pos += 1
        return tok

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok = self._peek()
            if tok.kind == "end":
                return requirements
            if tok.kind not in ("id", "!"):
                raise ValueError(f"found '{tok.text}', expected: !, identifier, or 'end of string'")
            try:
                requirements.append(self._requirement())
            except ValueError as exc:
                raise ValueError(f"unable to parse requirement: {exc}") from None
            tok = self._next()
            if tok.kind == "end":
                return requirements
            if tok.kind != ",":
                raise ValueError(f"found '{tok.text}', expected: ',' or 'end of string'")
            after = self._peek()
            if after.kind not in ("id", "!"):
                raise ValueError(f"found '{after.text}', expected: identifier after ','")

    def _requirement(self) -> Requirement:
        tok = self._next()
        negated = tok.kind == "!"
        if negated:
            tok = self._next()
        if tok.kind != "id":
            raise ValueError(f"found '{tok.text}', expected: identifier")
        key = tok.text
        if errs := qualified_name_errors(key):
            raise ValueError(_invalid("<nil>", key, "; ".join(errs)))
        if negated:
            return Requirement.make(key, Operator.DOES_NOT_EXIST)
        if self._peek().kind in ("end", ","):
            return Requirement.make(key, Operator.EXISTS)
        op_tok = self._next(values=False)
        op = {
            "in": Operator.IN,
            "notin": Operator.NOT_IN,
            "=": Operator.EQUALS,
            "==": Operator.DOUBLE_EQUALS,
            "!=": Operator.NOT_EQUALS,
            ">": Operator.GREATER_THAN,
            "<": Operator.LESS_THAN,
        }.get(op_tok.kind)
        if op is None:
            raise ValueError(f"found '{op_tok.text}', expected: {_BINARY_OPERATORS}")
        values = self._set_values() if op in (Operator.IN, Operator.NOT_IN) else self._exact_value()
        return Requirement.make(key, op, sorted(values))

    def _exact_value(self) -> list[str]:
        if self._peek().kind in ("end", ","):
            return [""]
        tok = self._next()
        if tok.kind != "id":
            raise ValueError(f"found '{tok.text}', expected: identifier")
        return [tok.text]

    def _set_values(self) -> set[str]:
        tok = self._next()
        if tok.kind != "(":
            raise ValueError(f"found '{tok.text}' expected: '('")
        tok = self._peek()
        if tok.kind == ")":
            self._next()
            return {""}
        if tok.kind not in ("id", ","):
            raise ValueError(f"found '{tok.text}', expected: ',', ')' or identifier")
        values: set[str] = set()
        while True:
            tok = self._next()
            if tok.kind == "id":
                values.add(tok.text)
                after = self._peek()
                if after.kind == ",":
                    self._next()
                    # A trailing comma before ')' stands for the empty value, as upstream.
                    if self._peek().kind == ")":
                        self._next()
                        values.add("")
                        return values
                    continue
                if after.kind == ")":
                    self._next()
                    return values
                raise ValueError(f"found '{after.text}', expected: ',' or ')'")
            if tok.kind == ",":
                values.add("")
                if self._peek().kind == ")":
                    self._next()
                    return values
                continue
            raise ValueError(f"found '{tok.text}', expected: ',', or identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """Parse a ``labelSelector=`` string; the empty string matches everything."""
    try:
        requirements = _Parser(text).parse()
    except ValueError as exc:
        raise SelectorError(str(exc)) from None
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))


_DICT_OPERATORS = {
    "In": Operator.IN,
    "NotIn": Operator.NOT_IN,
    "Exists": Operator.EXISTS,
    "DoesNotExist": Operator.DOES_NOT_EXIST,
}


def label_selector_from_dict(sel: Mapping[str, Any] | None, *, path: str = "") -> LabelSelector:
    """A ``metav1.LabelSelector`` body as a matcher (``LabelSelectorAsSelector``).

    ``None`` (a selector that is absent) matches nothing; ``{}`` (present but
    empty) matches everything.  The first bad key, value or operator raises
    :class:`SelectorError` with upstream's message; with ``path`` (the selector's field
    path, e.g. ``spec.nodeGroups[0].machineConfigPoolSelector``) the message names the
    offending ``matchLabels`` or ``matchExpressions[i]`` field.
    """
    if sel is None:
        return NOTHING
    match_labels = sel.get("matchLabels") or {}
    expressions = sel.get("matchExpressions") or []
    if not match_labels and not expressions:
        return EVERYTHING
    labels_at = f"{path}.matchLabels" if path else ""
    requirements = [
        Requirement.make(k, Operator.EQUALS, [v], where=labels_at) for k, v in match_labels.items()
    ]
    for i, expr in enumerate(expressions):
        where = f"{path}.matchExpressions[{i}]" if path else ""
        operator = expr.get("operator") or ""
        op = _DICT_OPERATORS.get(operator)
        if op is None:
            prefix = f"{where}.operator: " if where else ""
            raise SelectorError(f"{prefix}{go_quote(operator)} is not a valid label selector operator")
        requirements.append(Requirement.make(expr.get("key", ""), op, expr.get("values") or (), where=where))
    return LabelSelector(tuple(sorted(requirements, key=lambda r: r.key)))


def matches(sel: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """Whether ``labels`` satisfy a ``metav1.LabelSelector`` body.

    An absent selector matches nothing and ``{}`` everything; a selector upstream
    refuses to convert selects nothing, as callers that skip a bad selector do.
    """
    try:
        selector = label_selector_from_dict(sel)
    except SelectorError:
        return False
    return selector.matches(labels)
