"""Spec declarations: how a test of the serial suite says its Ginkgo text and labels.

Upstream nests ``Describe``/``Context``/``It``/``Entry`` nodes, each with a text and labels;
a spec's *full text* is all texts from the outermost container to the leaf joined by one
space, and its *effective labels* are the union of every level's labels plus the suite
label ``e2e:serial``. Here each level is a pytest mark ``nrop_spec(text, *labels)`` on the
module (``pytestmark``), a class, the test function or a parametrize entry::

    pytestmark = spec("[serial][disruptive][scheduler] numaresources workload placement",
                      "feature:wlplacement")

    class TestWithNodeSelector:
        pytestmark = spec("with a node selector", "tier1")

        @spec("[test_id:12345] should do X", "tier0", "nodelabel")
        def test_should_do_x(self, fxt): ...

    @pytest.mark.parametrize("policy", [entry("[test_id:47575] ...", "single-numa-node",
                                              labels=("tier0",))])
    def test_table(fxt, policy): ...

Labels are checked against :mod:`nrop.suite.plugin.labels` when the mark is made, so an unknown
label fails the import of the test module.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import pytest

from nrop.suite.plugin import labels as _labels

__all__ = ["SPEC_MARK", "SpecInfo", "entry", "resolve", "spec", "spec_info", "test_id_of"]

SPEC_MARK = "nrop_spec"

_TEST_ID = re.compile(r"\[test_id:(\d+)\]")


def spec(text: str, *labels: str) -> pytest.MarkDecorator:
    """One level of a spec: its text and its own labels (a ``nrop_spec`` mark)."""
    if not isinstance(text, str):
        raise TypeError(f"spec text must be a string, got {text!r}")
    _labels.validate(labels)
    return getattr(pytest.mark, SPEC_MARK)(text, *labels)


def entry(
    text: str, *values: object, labels: Iterable[str] = (), marks: Iterable[pytest.MarkDecorator] = ()
) -> object:
    """A table entry: ``pytest.param(*values)`` carrying the entry's spec level (and ``marks``,
    e.g. the embedded profile it needs).

    Its pytest id is the entry's ``test_id`` when the text has one, else the text.
    """
    label_tuple = tuple(labels)
    return pytest.param(*values, marks=[spec(text, *label_tuple), *marks], id=test_id_of(text) or text)


def test_id_of(text: str) -> str | None:
    """The last ``[test_id:NNNNN]`` in ``text`` (the innermost level's id wins)."""
    found = _TEST_ID.findall(text)
    return found[-1] if found else None


test_id_of.__test__ = False  # type: ignore[attr-defined]  # a helper, not a pytest test


@dataclass(frozen=True)
class SpecInfo:
    """What reports and selection need to know about one collected spec."""

    full_text: str
    labels: tuple[str, ...]
    test_id: str | None

    @property
    def tier(self) -> str | None:
        return next((label for label in self.labels if label in _labels.TIERS), None)

    @property
    def is_extra(self) -> bool:
        """A spec of this project, not upstream's (label ``extra``)."""
        return _labels.EXTRA_LABEL in self.labels

    def listing(self) -> str:
        """One line like Ginkgo's dry-run: the full text then the labels."""
        return f"{self.full_text} [{', '.join(self.labels)}]"


def resolve(levels: Iterable[tuple[str, tuple[str, ...]]]) -> SpecInfo:
    """Combine spec levels (outermost first) into the full text and effective labels."""
    texts: list[str] = []
    effective: list[str] = [_labels.SUITE_LABEL]
    for text, own in levels:
        if text:
            texts.append(text)
        effective.extend(label for label in own if label not in effective)
    full_text = " ".join(texts)
    return SpecInfo(full_text=full_text, labels=tuple(effective), test_id=test_id_of(full_text))


def spec_info(item: pytest.Item) -> SpecInfo | None:
    """The spec of a collected item, or None when no level of it is declared with :func:`spec`."""
    levels: list[tuple[str, tuple[str, ...]]] = []
    for node in item.listchain():
        for mark in node.own_markers:
            if mark.name == SPEC_MARK:
                text, *own = mark.args
                levels.append((text, tuple(own)))
    if not levels:
        return None
    return resolve(levels)
