"""Ginkgo's label-filter language, parsed into a predicate over a spec's labels.

``--label-filter`` accepts what ``ginkgo --label-filter`` accepts, with the same meaning:

* a bare label matches case-insensitively (``tier0``, ``feature:tmpol``);
* ``/regexp/`` matches when the expression is found in any label (case-sensitive);
* ``!`` (not) binds tighter than ``&&`` (and), which binds tighter than ``||`` (or);
  ``,`` is another spelling of ``||``; parentheses group;
* ``key: op {a, b}`` compares the set of values of the ``key:value`` labels
  (case-insensitively) with ``containsAny``, ``containsAll``, ``consistsOf``,
  ``isSubsetOf``, and ``key: isEmpty`` is true when there is no such label.
  A set key is followed by ``:`` and a space; ``feature:tmpol`` without the space is a label.

The empty filter selects everything. Syntax errors raise :class:`LabelFilterError` with the
position and the reason, in the words Ginkgo uses. Pure: no pytest, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from enum import Enum

__all__ = ["LabelFilterError", "Predicate", "parse"]

Predicate = Callable[[Collection[str]], bool]

_OPERATOR_CHARS = "&|!,()/"
_SET_OPERATIONS = {
    "containsany": "containsAny",
    "containsall": "containsAll",
    "consistsof": "consistsOf",
    "issubsetof": "isSubsetOf",
    "isempty": "isEmpty",
}


class LabelFilterError(ValueError):
    """The label filter does not parse."""

    def __init__(self, text: str, position: int, reason: str) -> None:
        where = f" at position {position}" if position >= 0 else ""
        pointer = f"\n  {text}\n  {' ' * position}^" if position >= 0 else ""
        super().__init__(f"invalid label filter {text!r}{where}: {reason}{pointer}")
        self.position = position
        self.reason = reason


class _Tok(Enum):
    AND = "&&"
    OR = "||"
    NOT = "!"
    OPEN = "("
    CLOSE = ")"
    LABEL = "label"
    REGEX = "/regexp/"
    SET = "set operation"
    EOF = "end of filter"


@dataclass(frozen=True)
class _Token:
    kind: _Tok
    position: int
    value: str = ""
    key: str = ""
    operation: str = ""
    argument: str = ""


def _until(text: str, start: int, stops: str) -> int:
    end = start
    while end < len(text) and text[end] not in stops:
        end += 1
    return end


def _set_operation(text: str, start: int, key: str, key_position: int) -> tuple[_Token, int]:
    """``key: op arg`` — ``start`` is just past the ``:``."""
    i = start
    while i < len(text) and text[i] == " ":
        i += 1
    end = _until(text, i, " )")
    op = text[i:end]
    canonical = _SET_OPERATIONS.get(op.lower())
    if canonical is None:
        raise LabelFilterError(text, i, f"Invalid set operation '{op}'.")
    i = end
    while i < len(text) and text[i] == " ":
        i += 1
    arg_position = i
    if i < len(text) and text[i] == "{":
        close = _until(text, i + 1, "}")
        if close >= len(text):
            raise LabelFilterError(text, i, "Missing closing '}' in set operation argument?")
        argument = text[i + 1 : close]
        i = close + 1
    else:
        end = _until(text, i, _OPERATOR_CHARS)
        argument = text[i:end].strip()
        i = end
    if canonical == "isEmpty":
        if argument:
            raise LabelFilterError(
                text, arg_position, f"isEmpty does not take arguments, was passed '{argument}'."
            )
    elif not argument:
        if i < len(text) and text[i] == "/":
            raise LabelFilterError(text, arg_position, "Set operations do not support regular expressions.")
        raise LabelFilterError(text, arg_position, f"Set operation '{canonical}' requires an argument.")
    token = _Token(_Tok.SET, key_position, key=key.strip().lower(), operation=canonical, argument=argument)
    return token, i


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    simple = {"!": _Tok.NOT, ",": _Tok.OR, "(": _Tok.OPEN, ")": _Tok.CLOSE}
    while True:
        while i < len(text) and text[i] == " ":
            i += 1
        if i >= len(text):
            tokens.append(_Token(_Tok.EOF, i))
            return tokens
        char = text[i]
        if char in "&|":
            if text[i : i + 2] != char * 2:
                raise LabelFilterError(text, i, f"Invalid token '{char}'.  Did you mean '{char * 2}'?")
            tokens.append(_Token(_Tok.AND if char == "&" else _Tok.OR, i))
            i += 2
        elif char in simple:
            tokens.append(_Token(simple[char], i))
            i += 1
        elif char == "/":
            end = _until(text, i + 1, "/")
            tokens.append(_Token(_Tok.REGEX, i, value=text[i + 1 : end]))
            i = end + 1
        else:
            start = i
            end = _until(text, i, _OPERATOR_CHARS + ":")
            value = text[i:end].strip()
            i = end
            if i < len(text) and text[i] == ":":
                if text[i + 1 : i + 2] == " ":
                    if not value:
                        raise LabelFilterError(text, i, "Missing set key.")
                    token, i = _set_operation(text, i + 1, value, start)
                    tokens.append(token)
                    continue
                end = _until(text, i, _OPERATOR_CHARS)
                rest = text[i:end].strip()
                if rest == ":":
                    raise LabelFilterError(text, i, "Missing set operation.")
                value += rest
                i = end
            lowered = value.lower()
            for op, canonical in _SET_OPERATIONS.items():
                at = lowered.find(" " + op)
                if at > 0:
                    raise LabelFilterError(
                        text,
                        start + at + 1,
                        f"Looks like you are using the set operator '{canonical}' but did not provide a set "
                        "key.  Did you forget the ':'?",
                    )
            tokens.append(_Token(_Tok.LABEL, start, value=value.strip()))


def _values_of(labels: Collection[str], key: str) -> set[str]:
    values: set[str] = set()
    for label in labels:
        name, sep, value = label.partition(":")
        if sep and name.strip().lower() == key:
            values.add(value.strip().lower())
    return values


def _set_predicate(text: str, token: _Token) -> Predicate:
    key = token.key
    if token.operation == "isEmpty":
        return lambda labels: not _values_of(labels, key)
    expected: list[str] = []
    for raw in token.argument.split(","):
        value = raw.strip().lower()
        if not value:
            raise LabelFilterError(text, token.position, "Empty label value in set operation argument.")
        if any(c in _OPERATOR_CHARS for c in value):
            raise LabelFilterError(
                text, token.position, f"Invalid label value '{value}' in set operation argument."
            )
        expected.append(value)
    wanted = set(expected)
    if token.operation == "containsAny":
        return lambda labels: bool(_values_of(labels, key) & wanted)
    if token.operation == "containsAll":
        return lambda labels: wanted <= _values_of(labels, key)
    if token.operation == "consistsOf":
        return lambda labels: _values_of(labels, key) == wanted
    return lambda labels: _values_of(labels, key) <= wanted  # isSubsetOf


def _either(a: Predicate, b: Predicate) -> Predicate:
    return lambda labels: a(labels) or b(labels)


def _both(a: Predicate, b: Predicate) -> Predicate:
    return lambda labels: a(labels) and b(labels)


class _Parser:
    """Recursive descent: or-expr := and-expr (|| and-expr)*; and-expr := unary (&& unary)*."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.index = 0

    def peek(self) -> _Token:
        return self.tokens[self.index]

    def take(self) -> _Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def parse(self) -> Predicate:
        predicate = self.or_expr()
        token = self.peek()
        if token.kind is _Tok.CLOSE:
            raise LabelFilterError(self.text, token.position, "Mismatched ')' - could not find matching '('.")
        if token.kind is not _Tok.EOF:
            raise LabelFilterError(
                self.text, token.position, "Found two adjacent labels.  You need an operator between them."
            )
        return predicate

    def or_expr(self) -> Predicate:
        left = self.and_expr()
        while self.peek().kind is _Tok.OR:
            self.take()
            right = self.and_expr()
            left = _either(left, right)
        return left

    def and_expr(self) -> Predicate:
        left = self.unary()
        while self.peek().kind is _Tok.AND:
            self.take()
            right = self.unary()
            left = _both(left, right)
        return left

    def unary(self) -> Predicate:
        token = self.take()
        if token.kind is _Tok.NOT:
            inner = self.unary()
            return lambda labels: not inner(labels)
        if token.kind is _Tok.OPEN:
            if self.peek().kind is _Tok.CLOSE:
                raise LabelFilterError(self.text, self.peek().position, "Found empty '()' group.")
            inner = self.or_expr()
            close = self.take()
            if close.kind is not _Tok.CLOSE:
                raise LabelFilterError(
                    self.text, token.position, "Mismatched '(' - could not find matching ')'."
                )
            return inner
        if token.kind is _Tok.LABEL:
            expected = token.value.lower()
            return lambda labels: any(label.lower() == expected for label in labels)
        if token.kind is _Tok.REGEX:
            try:
                pattern = re.compile(token.value)
            except re.error as exc:
                raise LabelFilterError(self.text, token.position, f"RegExp compilation error: {exc}") from exc
            return lambda labels: any(pattern.search(label) for label in labels)
        if token.kind is _Tok.SET:
            return _set_predicate(self.text, token)
        if token.kind is _Tok.EOF:
            raise LabelFilterError(self.text, -1, "Unexpected EOF.")
        raise LabelFilterError(
            self.text, token.position, f"Operator '{token.kind.value}' missing left hand operand."
        )


def parse(text: str) -> Predicate:
    """Compile a Ginkgo label filter into a predicate over a collection of labels."""
    if not text.strip():
        return lambda labels: True
    return _Parser(text).parse()
