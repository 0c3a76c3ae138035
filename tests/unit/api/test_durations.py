"""Go durations: the one parser and printer (nrop.api.durations), with Go's error texts."""

from __future__ import annotations

import pytest

from nrop.api.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("10s", 10.0),
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("1.5h", 5400.0),
        ("-2s", -2.0),
        ("+3m", 180.0),
        ("1h2m3s4ms", 3723.004),
        ("250us", 0.00025),
        (".5s", 0.5),
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("soon", 'time: invalid duration "soon"'),
        ("10", 'time: missing unit in duration "10"'),
        ("5d", 'time: unknown unit "d" in duration "5d"'),
        ("-", 'time: invalid duration "-"'),
        (".s", 'time: invalid duration ".s"'),
    ],
)
def test_parse_errors_use_go_texts(text: str, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        parse_duration(text)
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.5, "500ms"),
        (1.5, "1.5s"),
        (60, "1m0s"),
        (90, "1m30s"),
        (3600, "1h0m0s"),
        (-2, "-2s"),
        (1e-6, "1µs"),
    ],
)
def test_format(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
