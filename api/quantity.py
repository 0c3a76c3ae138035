"""Kubernetes resource quantities, parsed, compared and printed exactly like apimachinery.

This module owns the one representation of a ``resource.Quantity`` that every component
shares (NRT objects, pod requests, node capacity, kubelet accounting), so that the
strings the project writes are byte-identical to what a Go component would write.

Representation
    A :class:`Quantity` holds its value as an ``int`` count of nano-units (``nanos``),
    its :class:`Format` and, when parsing kept one, the verbatim input string.
    Upstream never keeps precision below 10^-9: parsing rounds a finer non-zero value
    *away from zero* to the next nano-unit (``"0.9n"`` is ``1n``), so an integer count
    of nano-units is exact for every parsable value. Python integers do not overflow,
    so the int64 wrap-around of upstream's accessors is not reproduced.

Behaviour reproduced (k8s.io/apimachinery ``pkg/api/resource``, 1.36/1.37)
    * Grammar: ``[+-]digits[.digits]`` followed by a binary suffix (``Ki`` .. ``Ei``),
      a decimal suffix (``n u m "" k M G T P E``) or an exponent (``e3``, ``E-3``,
      ``e+21``). The number may be ``1.`` or ``.5``; a bare ``"."``, ``"+"`` or ``"-"`` is
      zero, as upstream.
    * Errors carry upstream's three reasons (``ERR_FORMAT_WRONG``, ``ERR_NUMERIC``,
      ``ERR_SUFFIX``) in :attr:`QuantityError.reason`.
    * A ``BinarySI`` value is capped at 2^63-1 in magnitude; a ``BinarySI`` value
      strictly between -1 and 1 becomes ``DecimalSI``. Decimal values are not capped.
    * **Verbatim strings.** Upstream's parser caches the input as the quantity's string
      when its fast path thinks the input is already canonical, and ``String()`` and
      JSON then return that text unchanged: ``"1.441"`` stays ``"1.441"`` (its canonical
      form is ``"1441m"``), ``"+1k"`` stays ``"+1k"``, ``"1E3"`` stays ``"1E3"``.
      ``str(q)`` reproduces this; :meth:`Quantity.canonical_form` ignores the cached
      text. Arithmetic always drops it, as upstream does.
    * Canonical form (``CanonicalizeBytes``): the largest suffix that loses nothing.
      ``BinarySI`` falls back to ``DecimalSI`` below 1024 in magnitude or for a
      non-integer; ``DecimalSI`` values beyond ``E`` print as ``1e21``.
    * ``value()`` / ``milli_value()`` / ``scaled_value()`` round away from zero.

Deliberate limits: a quantity may have at most ``MAX_SIGNIFICANT_DIGITS`` digits as written
(Python refuses to convert longer integers to and from text by default) and a value of at most
``MAX_DIGITS`` decimal digits in nano-units (``1e5000`` is fine, ``1e200000`` is refused rather
than held as a 200000-digit integer); upstream accepts exponents up to 2^31.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import total_ordering
from typing import Final

__all__ = [
    "ERR_FORMAT_WRONG",
    "ERR_NUMERIC",
    "ERR_SUFFIX",
    "MAX_DIGITS",
    "MAX_SIGNIFICANT_DIGITS",
    "QUANTITY_PATTERN",
    "Format",
    "Quantity",
    "QuantityError",
    "canonical",
    "coerce",
    "format_quantity",
    "is_valid",
    "matches_pattern",
    "parse",
]


class Format(enum.StrEnum):
    """How a quantity is printed: the three ``resource.Format`` values."""

    DECIMAL_EXPONENT = "DecimalExponent"  # 12e6
    BINARY_SI = "BinarySI"  # 12Mi
    DECIMAL_SI = "DecimalSI"  # 12M


# The regular expression upstream quotes in its "wrong format" error (not the grammar it
# enforces, which is the scanner below).
_SPLIT_RE: Final = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG: Final = f"quantities must match the regular expression '{_SPLIT_RE}'"
ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
ERR_SUFFIX: Final = "unable to parse quantity's suffix"

#: The OpenAPI pattern of a quantity, as CRD schemas (and the NRT CRD) declare it.
QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_PATTERN_RE: Final = re.compile(QUANTITY_PATTERN)

#: Largest number of decimal digits a quantity's value may need, in nano-units. The value is
#: held as an integer and never converted to text whole, so this only bounds memory.
MAX_DIGITS: Final = 100_000
#: Largest number of digits a quantity may be written with (below Python's default
#: ``sys.get_int_max_str_digits()`` of 4300, with room for the nano-units and canonical shift).
MAX_SIGNIFICANT_DIGITS: Final = 4000

_NANO: Final = 10**9
_MAX_INT64: Final = 2**63 - 1
_DIGITS: Final = frozenset("0123456789")
_SUFFIX_CHARS: Final = frozenset("eEinumkKMGTP")
_EXPONENT_RE: Final = re.compile(r"[+-]?[0-9]+")

_DECIMAL_SUFFIXES: Final[dict[str, int]] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SUFFIXES: Final[dict[str, int]] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT: Final = {e: s for s, e in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT: Final = {e: s for s, e in _BINARY_SUFFIXES.items()}


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity.

    ``reason`` is upstream's error text (one of the ``ERR_*`` constants, or a note about
    this implementation's digit limit); ``text`` is the rejected input.
    """

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason
        super().__init__(f"invalid quantity {text!r}: {reason}")


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True, slots=True)
class _Scanned:
    positive: bool
    value: str  # the numeric text upstream's slow path hands to inf.Dec
    num: str  # integer digits, leading zeros stripped ("0" when none)
    denom: str  # fraction digits
    suffix: str


def _scan(text: str) -> _Scanned:
    """Split ``text`` into sign, number and suffix the way upstream's scanner does."""
    end = len(text)
    pos = 0
    positive = True
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos == end:
        # Only a sign and zeros: upstream returns zero before looking for a suffix.
        return _Scanned(positive, "0", "0", "", "")
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(text, ERR_FORMAT_WRONG)
    return _Scanned(positive, value, num, denom, text[suffix_start:])


def _interpret(text: str, suffix: str) -> tuple[int, int, Format]:
    """Return (base, exponent, format) for a suffix, as upstream's suffixer does."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], Format.DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], Format.BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT_RE.fullmatch(suffix[1:]):
        exponent = int(suffix[1:])
        if -(2**63) <= exponent <= _MAX_INT64:
            # Upstream parses an int64 and then truncates it to int32.
            wrapped = (exponent + 2**31) % 2**32 - 2**31
            return 10, wrapped, Format.DECIMAL_EXPONENT
    raise QuantityError(text, ERR_SUFFIX)


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def parse(text: str) -> Quantity:
    """Parse a quantity string like ``resource.ParseQuantity``.

    Raises :class:`QuantityError` for anything upstream rejects. Surrounding whitespace
    is an error here, as in ``ParseQuantity`` (JSON decoding trims it first: use
    :func:`coerce`).
    """
    if not isinstance(text, str):
        raise TypeError(f"quantity text must be a str, not {type(text).__name__}")
    if not text:
        raise QuantityError(text, ERR_FORMAT_WRONG)
    if text == "0":
        return Quantity(0, Format.DECIMAL_SI, "0")

    scanned = _scan(text)
    base, exponent, fmt = _interpret(text, scanned.suffix)
    num, denom = scanned.num, scanned.denom
    shifted = num + denom

    # Upstream has an int64 fast path; which inputs take it decides two visible things:
    # whether the input text is kept verbatim, and whether a digitless number (".e-10")
    # reaches the slow path, whose decimal parser rejects it.
    if fmt is Format.BINARY_SI:
        scale = 0
        precision = 14 - len(num) - exponent * 3 // 10 if exponent >= 0 and not denom else -1
    else:
        scale = exponent
        precision = 18 - len(shifted)
    fast = False
    if precision >= 0:
        scale -= len(denom)
        fast = scale >= -9

    verbatim: str | None = None
    if fast:
        if fmt is Format.BINARY_SI:
            if int(shifted) & 0x07:
                verbatim = text
        elif scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0":
            verbatim = text
    elif not any(ch in _DIGITS for ch in scanned.value):
        raise QuantityError(text, ERR_NUMERIC)

    digits = shifted.lstrip("0") or "0"
    if len(digits) > MAX_SIGNIFICANT_DIGITS:
        raise QuantityError(
            text, f"has more than {MAX_SIGNIFICANT_DIGITS} digits, beyond this implementation"
        )
    if digits == "0":
        nanos = 0
    elif base == 10:
        power = exponent - len(denom) + 9  # value in nano-units is digits * 10**power
        if len(digits) + max(power, 0) > MAX_DIGITS:
            raise QuantityError(text, f"needs more than {MAX_DIGITS} digits, beyond this implementation")
        if power >= 0:
            nanos = int(digits) * 10**power
        elif -power > len(digits):
            nanos = 1  # the whole value is below one nano-unit
        else:
            nanos = _ceil_div(int(digits), 10**-power)
    else:
        nanos = _ceil_div(int(digits) * 2**exponent * _NANO, 10 ** len(denom))
        nanos = min(nanos, _MAX_INT64 * _NANO)
        if 0 < nanos < _NANO:
            fmt = Format.DECIMAL_SI
    return Quantity(nanos if scanned.positive else -nanos, fmt, verbatim)


def is_valid(text: str) -> bool:
    """Whether :func:`parse` accepts ``text``."""
    try:
        parse(text)
    except QuantityError:
        return False
    return True


def matches_pattern(text: str) -> bool:
    """Whether ``text`` matches the OpenAPI quantity pattern (stricter than the parser)."""
    return _PATTERN_RE.fullmatch(text) is not None


def coerce(value: Quantity | str | int) -> Quantity:
    """A quantity from what JSON may hold: a Quantity, a string, or an integer.

    Strings are trimmed like upstream's ``UnmarshalJSON``; an integer is parsed from its
    decimal text, which is what decoding a JSON number does.
    """
    if isinstance(value, Quantity):
        return value
    if isinstance(value, bool):
        raise TypeError("a bool is not a quantity")
    if isinstance(value, int):
        return parse(str(value))
    if isinstance(value, str):
        return parse(value.strip())
    raise TypeError(f"cannot make a quantity from {type(value).__name__}")


# ------------------------------------------------------------------------ formatting


def _strip_tens(value: int) -> tuple[int, int]:
    """Return (m, k) with value == m * 10**k and m not divisible by 10 (value != 0).

    Arithmetic rather than text, so that values longer than Python's integer-to-text limit
    (``1e5000`` is 5010 digits in nano-units) work: whole runs of zeros are divided out,
    doubling the run while it divides and starting over at one when it does not.
    """
    mantissa, tens, run = abs(value), 0, 1
    while True:
        quotient, remainder = divmod(mantissa, 10**run)
        if remainder:
            if run == 1:
                break
            run = 1
            continue
        mantissa, tens, run = quotient, tens + run, run * 2
    return (mantissa if value > 0 else -mantissa), tens


def _canonicalize(nanos: int, fmt: Format) -> str:
    if nanos == 0:
        return "0"
    if fmt is Format.BINARY_SI and (-1024 * _NANO < nanos < 1024 * _NANO or nanos % _NANO):
        # Small or fractional binary values would round: show them in decimal.
        fmt = Format.DECIMAL_SI
    if fmt is Format.BINARY_SI:
        units = nanos // _NANO
        power = 0
        while units % 1024 == 0:
            units //= 1024
            power += 1
        # Like upstream, a power of 1024 beyond Ei (only reachable by arithmetic) has no
        # suffix and is printed without one.
        return f"{units}{_BINARY_BY_EXPONENT.get(power * 10, '')}"
    mantissa, tens = _strip_tens(nanos)
    exponent = tens - 9
    shift = exponent % 3  # lower the exponent to a multiple of three
    mantissa *= 10**shift
    exponent -= shift
    if fmt is Format.DECIMAL_SI and exponent in _DECIMAL_BY_EXPONENT:
        return f"{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"
    return f"{mantissa}e{exponent}" if exponent else str(mantissa)


# -------------------------------------------------------------------------- the type


@total_ordering
@dataclass(frozen=True, eq=False, slots=True)
class Quantity:
    """An exact quantity: ``nanos`` nano-units, printed in ``format``.

    Equality, ordering and hashing use the value only (``Quantity.Cmp``), so
    ``parse("1Gi") == parse("1024Mi")``. Comparison and ``+``/``-`` also accept an
    ``int`` counted in whole units. ``verbatim`` is the input text upstream would keep
    as the string form (see the module docstring); leave it ``None`` when building.
    """

    nanos: int
    format: Format = Format.DECIMAL_SI
    verbatim: str | None = None

    # -- construction (the upstream New* helpers)
    @classmethod
    def from_int(cls, value: int, format: Format = Format.DECIMAL_SI) -> Quantity:
        """``resource.NewQuantity(value, format)``."""
        return cls(value * _NANO, format)

    @classmethod
    def from_milli(cls, milli: int, format: Format = Format.DECIMAL_SI) -> Quantity:
        """``resource.NewMilliQuantity(milli, format)``."""
        return cls(milli * 10**6, format)

    @classmethod
    def from_scaled(cls, value: int, scale: int) -> Quantity:
        """``resource.NewScaledQuantity(value, scale)``: value * 10**scale, ``DecimalSI``.

        Scales below nano (-9) round away from zero to a whole nano-unit.
        """
        if scale >= -9:
            return cls(value * 10 ** (scale + 9), Format.DECIMAL_SI)
        magnitude = _ceil_div(abs(value), 10 ** (-9 - scale))
        return cls(magnitude if value >= 0 else -magnitude, Format.DECIMAL_SI)

    @classmethod
    def from_fraction(cls, value: Fraction | int, format: Format = Format.DECIMAL_SI) -> Quantity:
        """An exact value; anything finer than a nano-unit rounds away from zero."""
        exact = Fraction(value)
        magnitude = _ceil_div(abs(exact.numerator) * _NANO, exact.denominator)
        return cls(magnitude if exact >= 0 else -magnitude, format)

    def with_format(self, format: Format) -> Quantity:
        """The same value printed in another format (drops any verbatim text)."""
        return Quantity(self.nanos, format)

    # -- accessors
    @property
    def fraction(self) -> Fraction:
        """The exact value as a Fraction of whole units."""
        return Fraction(self.nanos, _NANO)

    def sign(self) -> int:
        return (self.nanos > 0) - (self.nanos < 0)

    def is_zero(self) -> bool:
        return self.nanos == 0

    def scaled_value(self, scale: int) -> int:
        """``ScaledValue``: the value in units of 10**scale, rounded away from zero."""
        power = 9 + scale
        if power <= 0:
            return self.nanos * 10**-power
        magnitude = _ceil_div(abs(self.nanos), 10**power)
        return magnitude if self.nanos >= 0 else -magnitude

    def value(self) -> int:
        """``Value()``: whole units, rounded away from zero (``500m`` gives 1)."""
        return self.scaled_value(0)

    def milli_value(self) -> int:
        """``MilliValue()``: thousandths, rounded away from zero."""
        return self.scaled_value(-3)

    def as_int64(self) -> int | None:
        """``AsInt64()``: the value when it is a whole number that fits an int64, else None
        (Go's ``(0, false)``); unlike :meth:`value`, ``1500m`` is not an int64."""
        whole, rest = divmod(self.nanos, _NANO)
        if rest or not -(2**63) <= whole < 2**63:
            return None
        return whole

    def canonical_form(self) -> str:
        """The canonical string (``CanonicalizeBytes``), ignoring any verbatim text."""
        return _canonicalize(self.nanos, self.format)

    def __str__(self) -> str:
        """What upstream's ``String()`` and JSON encoding produce."""
        return self.verbatim if self.verbatim is not None else self.canonical_form()

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r}, {self.format.value})"

    # -- comparison
    @staticmethod
    def _nanos_of(other: object) -> int | None:
        if isinstance(other, Quantity):
            return other.nanos
        if isinstance(other, int) and not isinstance(other, bool):
            return other * _NANO
        return None

    def cmp(self, other: Quantity | int) -> int:
        """``Cmp``: -1, 0 or 1."""
        theirs = self._nanos_of(other)
        if theirs is None:
            raise TypeError(f"cannot compare a Quantity with {type(other).__name__}")
        return (self.nanos > theirs) - (self.nanos < theirs)

    def __eq__(self, other: object) -> bool:
        theirs = self._nanos_of(other)
        return NotImplemented if theirs is None else self.nanos == theirs

    def __lt__(self, other: object) -> bool:
        theirs = self._nanos_of(other)
        return NotImplemented if theirs is None else self.nanos < theirs

    def __hash__(self) -> int:
        return hash(self.nanos)

    def __bool__(self) -> bool:
        return self.nanos != 0

    # -- arithmetic (upstream Add/Sub/Neg/Mul: the left format wins unless it is zero)
    def _combine(self, other: object, sign: int) -> Quantity | None:
        if isinstance(other, Quantity):
            fmt = other.format if self.nanos == 0 else self.format
            return Quantity(self.nanos + sign * other.nanos, fmt)
        theirs = self._nanos_of(other)
        if theirs is None:
            return None
        fmt = Format.DECIMAL_SI if self.nanos == 0 else self.format
        return Quantity(self.nanos + sign * theirs, fmt)

    def __add__(self, other: object) -> Quantity:
        result = self._combine(other, 1)
        return NotImplemented if result is None else result

    def __radd__(self, other: object) -> Quantity:
        theirs = self._nanos_of(other)
        if theirs is None:
            return NotImplemented
        # `0 + q` (as in sum()) behaves like Add on a zero receiver: q's format wins.
        fmt = self.format if theirs == 0 else Format.DECIMAL_SI
        return Quantity(theirs + self.nanos, fmt)

    def __sub__(self, other: object) -> Quantity:
        result = self._combine(other, -1)
        return NotImplemented if result is None else result

    def __rsub__(self, other: object) -> Quantity:
        theirs = self._nanos_of(other)
        if theirs is None:
            return NotImplemented
        fmt = self.format if theirs == 0 else Format.DECIMAL_SI
        return Quantity(theirs - self.nanos, fmt)

    def __neg__(self) -> Quantity:
        return Quantity(-self.nanos, self.format)

    def __abs__(self) -> Quantity:
        return Quantity(abs(self.nanos), self.format)

    def __mul__(self, other: object) -> Quantity:
        if isinstance(other, int) and not isinstance(other, bool):
            return Quantity(self.nanos * other, self.format)
        return NotImplemented

    __rmul__ = __mul__


def canonical(text: str) -> str:
    """Round-trip a quantity string the way upstream does: ``MustParse(text).String()``.

    Note this keeps the inputs upstream keeps verbatim (``"1.441"``, ``"+1k"``); use
    ``parse(text).canonical_form()`` for the strict canonical form.
    """
    return str(parse(text))


def format_quantity(value: int | Fraction | Quantity, format: Format = Format.DECIMAL_SI) -> str:
    """The string of a value in a format, as ``NewQuantity(value, format).String()``.

    ``format_quantity(2048 * 2**20, Format.BINARY_SI) == "2Gi"``,
    ``format_quantity(524288000) == "524288k"``.
    """
    if isinstance(value, Quantity):
        return _canonicalize(value.nanos, format)
    return Quantity.from_fraction(value, format).canonical_form()
