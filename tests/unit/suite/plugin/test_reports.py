"""The failure report's scheduler log: its window and how a long one is shortened."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from nrop.suite.plugin.reports import SCHEDULER_LOG_MARGIN, head_and_tail, scheduler_log_window

NOW = datetime(2026, 11, 30, 20, 40, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "created,seconds,says",
    [
        ("2026-11-30T20:30:00Z", 600 + SCHEDULER_LOG_MARGIN, "since the test namespace was created at"),
        ("2026-11-30T20:39:59.5Z", 1 + SCHEDULER_LOG_MARGIN, "since the test namespace was created at"),
        # a namespace stamped after now (the cluster's clock ahead of ours): the margin alone
        ("2026-11-30T20:40:30Z", SCHEDULER_LOG_MARGIN, "since the test namespace was created at"),
        (None, 300, "last 300s"),
        ("", 300, "last 300s"),
        ("yesterday", 300, "last 300s"),
    ],
    ids=["ten-minutes", "rounded-up", "clock-skew", "unknown", "empty", "unparsable"],
)
def test_scheduler_log_window(created: str | None, seconds: int, says: str) -> None:
    got_seconds, got_says = scheduler_log_window(created, now=NOW)
    assert got_seconds == seconds
    assert says in got_says


@pytest.mark.parametrize(
    "text,head,tail,expected",
    [
        ("a\nb\n", 2, 2, "a\nb\n"),
        ("", 1, 1, ""),
        ("l1\nl2\nl3\nl4\nl5\n", 4, 4, "l1\n[… 9 characters left out …]\nl5\n"),
        ("l1\nl2\nl3\nl4\nl5\n", 7, 6, "l1\nl2\n[… 3 characters left out …]\nl4\nl5\n"),
        # no line break inside the kept head or tail: cut mid-line rather than keep nothing
        ("abcdefghij", 3, 3, "abc[… 4 characters left out …]\nhij"),
    ],
    ids=["short-kept-whole", "empty", "whole-lines", "more-lines", "one-long-line"],
)
def test_head_and_tail(text: str, head: int, tail: int, expected: str) -> None:
    assert head_and_tail(text, head, tail) == expected
