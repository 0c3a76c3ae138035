"""Container logs as a node keeps them for ``pods/log`` (``kubelet/containerlogs.py``)."""

from __future__ import annotations

import asyncio
import inspect
from datetime import UTC, datetime, timedelta

import pytest

from nrop.localcluster.apiserver.clients import LogQuery, LogSource
from nrop.localcluster.kubelet import containerlogs
from nrop.localcluster.kubelet.containerlogs import ContainerLogs

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def read(logs: ContainerLogs, **query: object) -> str:
    return logs.read("ns", "p", LogQuery("c", **query), now=T0 + timedelta(seconds=100)).decode()  # type: ignore[arg-type]


def test_partial_lines_wait_for_their_newline() -> None:
    logs = ContainerLogs()
    logs.append("ns", "p", "c", "one\ntw", T0)
    assert read(logs) == "one\n"
    logs.append("ns", "p", "c", "o\n", T0)
    assert read(logs) == "one\ntwo\n"


def test_after_a_reboot_a_container_counts_on_from_its_latest_instance() -> None:
    logs = ContainerLogs()
    assert logs.next_restart_count("ns", "p", "u1", "c") == 0  # never ran on this node
    logs.started("ns", "p", "u1", "c", 0)
    assert logs.next_restart_count("ns", "p", "u1", "c") == 1
    logs.append("ns", "p", "c", "before\n", T0)
    logs.started("ns", "p", "u1", "c", 3)
    assert logs.next_restart_count("ns", "p", "u1", "c") == 4
    assert read(logs, previous=True) == "before\n"  # a restart's instance: the last one is previous
    assert logs.next_restart_count("ns", "p", "u2", "c") == 0  # a new pod of the same name
    logs.forget("ns", "p")
    assert logs.next_restart_count("ns", "p", "u1", "c") == 0


def test_rotate_keeps_the_previous_instance_only() -> None:
    logs = ContainerLogs()
    assert not logs.has_previous("ns", "p", "c")
    for instance in ("first", "second", "third"):
        if instance != "first":
            logs.rotate("ns", "p", "c")
        logs.append("ns", "p", "c", f"{instance}\n", T0)
    assert logs.has_previous("ns", "p", "c")
    assert read(logs) == "third\n"
    assert read(logs, previous=True) == "second\n"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param({"tail_lines": 2}, "b\nc\n", id="tail"),
        pytest.param({"tail_lines": 0}, "", id="tail-0"),
        pytest.param({"limit_bytes": 3}, "a\nb", id="limit-bytes"),
        pytest.param({"since_seconds": 60}, "c\n", id="since"),
        pytest.param(
            {"timestamps": True, "tail_lines": 1}, "2030-01-01T00:01:30.000000Z c\n", id="timestamps"
        ),
    ],
)
def test_read_options(query: dict[str, object], expected: str) -> None:
    logs = ContainerLogs()
    logs.append("ns", "p", "c", "a\n", T0)
    logs.append("ns", "p", "c", "b\n", T0 + timedelta(seconds=10))
    logs.append("ns", "p", "c", "c\n", T0 + timedelta(seconds=90))
    assert read(logs, **query) == expected


def test_the_oldest_lines_go_past_the_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(containerlogs, "MAX_CHARS", 10)
    logs = ContainerLogs()
    for word in ("aaa", "bbb", "ccc", "ddd"):  # 4 characters each with the newline
        logs.append("ns", "p", "c", f"{word}\n", T0)
    assert read(logs) == "ccc\nddd\n"


def test_follow_sends_new_lines_until_the_log_closes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(containerlogs, "MAX_CHARS", 10)

    async def main() -> list[bytes]:
        logs = ContainerLogs()
        logs.append("ns", "p", "c", "old\n", T0)
        received: list[bytes] = []

        async def follow() -> None:
            async for chunk in logs.follow("ns", "p", LogQuery("c")):
                received.append(chunk)

        task = asyncio.create_task(follow())
        await asyncio.sleep(0.01)
        logs.append("ns", "p", "c", "new1\nnew2\n", T0)  # pushes "old" out of the buffer
        await asyncio.sleep(0.01)
        logs.close("ns", "p", "c")
        await asyncio.wait_for(task, 1)
        return received

    assert asyncio.run(main()) == [b"old\n", b"new1\nnew2\n"]


def test_container_logs_are_a_log_source() -> None:
    for name in ("has_previous", "read", "follow", "append"):
        wanted = [p for p in inspect.signature(getattr(LogSource, name)).parameters if p != "self"]
        have = [p for p in inspect.signature(getattr(ContainerLogs(), name)).parameters]
        assert have[: len(wanted)] == wanted, name
