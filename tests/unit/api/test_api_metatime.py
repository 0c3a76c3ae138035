"""Kubernetes timestamps: metav1.Time and MicroTime as the API writes them, and their parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from nrop.api.metatime import from_unix_nanos, parse_time, rfc3339, rfc3339_micro

MOMENT = datetime(2026, 11, 29, 11, 5, 7, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    ("when", "time", "micro"),
    [
        pytest.param(MOMENT, "2026-11-29T11:05:07Z", "2026-11-29T11:05:07.123456Z", id="utc"),
        pytest.param(
            MOMENT.astimezone(timezone(timedelta(hours=2))),
            "2026-11-29T11:05:07Z",
            "2026-11-29T11:05:07.123456Z",
            id="offset-converted-to-utc",
        ),
        pytest.param(
            MOMENT.replace(microsecond=0),
            "2026-11-29T11:05:07Z",
            "2026-11-29T11:05:07.000000Z",
            id="whole-second",
        ),
    ],
)
def test_formats(when: datetime, time: str, micro: str) -> None:
    assert (rfc3339(when), rfc3339_micro(when)) == (time, micro)


@pytest.mark.parametrize(
    ("nanos", "expected"),
    [
        pytest.param(
            1_796_036_707_123_456_789, "2026-11-30T11:05:07.123456Z", id="truncates-to-microseconds"
        ),
        pytest.param(0, "1970-01-01T00:00:00.000000Z", id="epoch"),
    ],
)
def test_from_unix_nanos_has_no_float_rounding(nanos: int, expected: str) -> None:
    assert rfc3339_micro(from_unix_nanos(nanos)) == expected


@pytest.mark.parametrize(
    "text",
    ["2026-11-29T11:05:07.123456Z", "2026-11-29T13:05:07.123456+02:00", " 2026-11-29T11:05:07.123456z "],
)
def test_parse_time(text: str) -> None:
    assert parse_time(text) == MOMENT


def test_parse_time_reads_a_naive_stamp_as_utc() -> None:
    assert parse_time("2026-11-29T11:05:07") == MOMENT.replace(microsecond=0)
