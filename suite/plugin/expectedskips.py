"""Which specs may skip on the embedded cluster, and why; any other skip there is a failure.

Upstream's specs skip rather than fail when the cluster looks unsuitable ("we prefer to skip than
a false negative"): right on a cluster someone else built, where a skip says what it lacks. The
embedded cluster's profiles are built to run every spec, so there a skip means the stack under
test hid something the profile provides (an exporter that reports hugepages wrong makes the
hugepages specs skip "not enough nodes", and a CI gate would stay green). On an embedded
target the plugin therefore turns a skip into a failure unless it is listed here: the specs
that need what no embedded profile serves yet (HyperShift), and
upstream's own "currently known broken" cases. Pure: the plugin asks :func:`is_expected`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EXPECTED", "ExpectedSkip", "flavour_missing", "is_expected", "unexpected_message"]


@dataclass(frozen=True)
class ExpectedSkip:
    """A spec (its ``test_id``, or the test function's name when it has none) that may skip on
    the embedded cluster with a reason starting with ``reason``."""

    spec: str
    reason: str
    why: str


_HYPERSHIFT = "no embedded profile is a HyperShift hosted cluster yet"
_KNOWN_BROKEN = "upstream skips it itself"

EXPECTED: tuple[ExpectedSkip, ...] = (
    ExpectedSkip("80823", "requires HyperShift", _HYPERSHIFT),
    ExpectedSkip("80912", "requires HyperShift", _HYPERSHIFT),
    ExpectedSkip("85776", "currently known broken", _KNOWN_BROKEN),
    ExpectedSkip("85777", "currently known broken", _KNOWN_BROKEN),
    ExpectedSkip("85778", "currently known broken", _KNOWN_BROKEN),
)


def is_expected(test_id: str | None, function_name: str, reason: str) -> bool:
    """Whether a spec may skip on the embedded cluster with ``reason``."""
    spec = test_id or function_name
    return any(entry.spec == spec and reason.startswith(entry.reason) for entry in EXPECTED)


def flavour_missing(test_id: str | None) -> str | None:
    """Why no embedded profile can run this spec (it needs a flavour none serves: its skip says
    ``requires ...``), else None. ``make upstream-e2e`` does not ask upstream's binary to run it
    there either: upstream's CI runs such a spec in that flavour's lane only."""
    for entry in EXPECTED:
        if entry.spec == test_id and entry.reason.startswith("requires "):
            return f"{entry.reason}: {entry.why}"
    return None


def unexpected_message(reason: str) -> str:
    """The failure a skip becomes on the embedded cluster."""
    return (
        f"skipped on the embedded cluster, whose profiles are built to run this spec: {reason}\n"
        "(the stack under test hid what the profile provides; the skips expected there are listed "
        "in nrop.suite.plugin.expectedskips)"
    )
