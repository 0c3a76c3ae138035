"""The scheduler's event recorder: event bodies, isomorphism, and the series bookkeeping of events/v1.

The broadcaster writes through a recording double of the client (every call kept, and
scripted failures), with the clocks injected, so the series arithmetic is checked
without a server or sleeping; the conformance test writes to a real API server.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from nrop.api.restapi import EVENTS, ApiConnectionError, ApiError, NotFoundError, PatchType
from nrop.sched.events import (
    NOTE_LENGTH_LIMIT,
    EventBroadcaster,
    isomorphic_key,
    make_event,
    pod_reference,
    truncate_note,
)

POD = {
    "metadata": {"name": "p1", "namespace": "ns", "uid": "u-1", "resourceVersion": "42", "labels": {"a": "b"}}
}
NS = 1_735_689_600_000_001_000  # 2025-01-01T00:00:00.000001Z


class RecordingClient:
    def __init__(self, failures: list[Exception] | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.failures = failures or []

    def _maybe_fail(self) -> None:
        if self.failures:
            raise self.failures.pop(0)

    async def create(
        self, resource: Any, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        assert resource is EVENTS
        self.calls.append(("create", copy.deepcopy(body)))
        self._maybe_fail()
        return body

    async def patch(
        self, resource: Any, name: str, patch: Any, namespace: str | None = None, *, patch_type: PatchType
    ) -> dict[str, Any]:
        assert resource is EVENTS and patch_type is PatchType.STRATEGIC
        self.calls.append(("patch", (namespace, name, copy.deepcopy(patch))))
        self._maybe_fail()
        return {}


def test_make_event_has_the_events_v1_shape() -> None:
    event = make_event(
        pod_reference(POD),
        "Normal",
        "Scheduled",
        "Binding",
        "assigned",
        controller="sched",
        instance="sched-h",
        now_ns=NS,
    )
    assert event == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"p1.{NS:x}", "namespace": "ns"},
        "eventTime": "2025-01-01T00:00:00.000001Z",
        "reportingController": "sched",
        "reportingInstance": "sched-h",
        "action": "Binding",
        "reason": "Scheduled",
        "regarding": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": "ns",
            "name": "p1",
            "uid": "u-1",
            "resourceVersion": "42",
        },
        "note": "assigned",
        "type": "Normal",
    }


@pytest.mark.parametrize(
    ("note", "expected_length", "ends"),
    [
        pytest.param("short", 5, "short", id="short-kept"),
        pytest.param("x" * NOTE_LENGTH_LIMIT, NOTE_LENGTH_LIMIT, "x", id="at-limit-kept"),
        pytest.param("x" * 5000, NOTE_LENGTH_LIMIT, " ...", id="long-cut"),
    ],
)
def test_truncate_note(note: str, expected_length: int, ends: str) -> None:
    cut = truncate_note(note)
    assert len(cut) == expected_length and cut.endswith(ends)


def _event(
    reason: str = "FailedScheduling",
    note: str = "n",
    rv: str = "42",
    controller: str = "sched",
    event_type: str = "Warning",
    instance: str = "i",
) -> dict[str, Any]:
    pod = copy.deepcopy(POD)
    pod["metadata"]["resourceVersion"] = rv
    return make_event(
        pod_reference(pod),
        event_type,
        reason,
        "Scheduling",
        note,
        controller=controller,
        instance=instance,
        now_ns=NS,
    )


@pytest.mark.parametrize(
    ("other", "same"),
    [
        pytest.param(_event(note="different words"), True, id="note-does-not-matter"),
        pytest.param(_event(reason="Scheduled"), False, id="reason-matters"),
        pytest.param(_event(rv="43"), False, id="pod-resource-version-matters"),
        pytest.param(_event(controller="other-sched"), False, id="controller-matters"),
        pytest.param(_event(event_type="Normal"), False, id="type-matters"),
        pytest.param(_event(instance="other-host"), False, id="instance-matters"),
    ],
)
def test_isomorphic_key(other: dict[str, Any], same: bool) -> None:
    assert (isomorphic_key(_event()) == isomorphic_key(other)) is same


def broadcaster(client: RecordingClient, now: list[float], **options: Any) -> EventBroadcaster:
    wall = iter(range(NS, NS + 10**12, 10**9))  # one second of wall time per reading
    return EventBroadcaster(
        client,  # type: ignore[arg-type]
        hostname="h",
        clock=lambda: now[0],
        wall_ns=lambda: next(wall),
        retry_delay=0.0,
        max_tries=3,
        finish_interval=360.0,
        **options,
    )


def test_series_create_then_patch_count_two_then_count_in_memory_until_finish() -> None:
    client, now = RecordingClient(), [0.0]
    events = broadcaster(client, now)
    first = _event()

    async def go() -> None:
        for _ in range(4):
            await events._record(copy.deepcopy(first))
        assert [c[0] for c in client.calls] == ["create", "patch"]
        assert client.calls[0][1]["metadata"]["name"] == first["metadata"]["name"]
        assert "series" not in client.calls[0][1]
        namespace, name, patch = client.calls[1][1]
        assert (namespace, name) == ("ns", first["metadata"]["name"])
        assert patch["series"]["count"] == 2
        now[0] = 100.0
        await events._finish(now[0])  # not over yet: nothing written
        assert len(client.calls) == 2
        await events._refresh()  # the periodic heartbeat writes the count so far
        assert client.calls[-1][0] == "patch" and client.calls[-1][1][2]["series"]["count"] == 4
        now[0] = 500.0
        await events._finish(now[0])  # 6 minutes without a repetition: final write, out of the cache
        assert client.calls[-1][1][2]["series"]["count"] == 4
        await events._record(copy.deepcopy(first))
        assert client.calls[-1][0] == "create"  # a new occurrence starts a new event

    asyncio.run(go())


def test_singletons_leave_the_cache_silently() -> None:
    client, now = RecordingClient(), [0.0]
    events = broadcaster(client, now)

    async def go() -> None:
        await events._record(_event())
        now[0] = 361.0
        await events._finish(now[0])
        await events._record(_event())

    asyncio.run(go())
    assert [c[0] for c in client.calls] == ["create", "create"]


@pytest.mark.parametrize(
    ("failures", "calls", "failed"),
    [
        pytest.param([ApiConnectionError("refused")], ["create", "create"], 0, id="connection-error-retried"),
        pytest.param([ApiConnectionError("refused")] * 3, ["create"] * 3, 1, id="gives-up-after-max-tries"),
        pytest.param([ApiError(422, "Invalid", "note too long")], ["create"], 1, id="rejection-is-final"),
        pytest.param([ApiError(409, "AlreadyExists", "exists")], ["create"], 1, id="already-exists-is-final"),
    ],
)
def test_write_retries_only_without_a_response(
    failures: list[Exception], calls: list[str], failed: int
) -> None:
    client, now = RecordingClient(failures), [0.0]
    events = broadcaster(client, now)
    asyncio.run(events._record(_event()))
    assert [c[0] for c in client.calls] == calls
    assert events.failed == failed


def test_series_create_finding_the_event_created_meanwhile_patches_again() -> None:
    # The second occurrence's patch ran while the first create was in flight: nothing to
    # patch, and its create then finds the event; client-go retries that one (AlreadyExists
    # is final only for a plain create).
    client, now = RecordingClient(), [0.0]
    events = broadcaster(client, now)

    async def go() -> None:
        await events._record(_event())
        client.failures = [
            NotFoundError(404, "NotFound", "not yet"),
            ApiError(409, "AlreadyExists", "exists"),
        ]
        await events._record(_event())

    asyncio.run(go())
    assert [c[0] for c in client.calls] == ["create", "patch", "create", "patch"]
    assert client.calls[-1][1][2]["series"]["count"] == 2 and events.failed == 0


def test_finish_keeps_a_series_whose_last_write_may_succeed_later() -> None:
    client, now = RecordingClient(), [0.0]
    events = broadcaster(client, now)

    async def go() -> None:
        for _ in range(3):
            await events._record(_event())
        now[0] = 400.0
        client.failures = [ApiConnectionError("refused")]
        await events._finish(now[0])  # one try, no response: the series stays for the next round
        await events._finish(now[0])
        await events._record(_event())  # out of the cache now: a new event

    asyncio.run(go())
    kinds = [c[0] for c in client.calls]
    assert kinds == ["create", "patch", "patch", "patch", "create"]
    assert client.calls[3][1][2]["series"]["count"] == 3


def test_writes_run_side_by_side_one_task_per_event() -> None:
    # client-go's recordToSink starts a goroutine per event: a pod's Scheduled event does
    # not wait behind the writes queued before it.
    client = RecordingClient()
    gate = asyncio.Event()
    plain_create = client.create

    async def held_create(*args: Any, **kwargs: Any) -> Any:
        result = await plain_create(*args, **kwargs)
        await gate.wait()
        return result

    client.create = held_create  # type: ignore[method-assign]
    events = broadcaster(client, [0.0])
    recorder = events.recorder("nrop-scheduler")

    async def go() -> None:
        events.start()
        for name in ("p1", "p2", "p3"):
            recorder.failed_scheduling(
                {"metadata": {**POD["metadata"], "name": name}}, "0/3 nodes are available"
            )
        recorder.scheduled({"metadata": {**POD["metadata"], "name": "p4"}}, "node-1")
        async with asyncio.timeout(3):
            while len(client.calls) < 4:
                await asyncio.sleep(0.01)
        assert not events._idle.is_set(), "the broadcaster reported idle with writes in flight"
        gate.set()
        await events.close(drain_timeout=3)

    asyncio.run(go())
    reasons = [c[1]["reason"] for c in client.calls]
    assert reasons == ["FailedScheduling"] * 3 + ["Scheduled"]


def test_series_patch_of_a_vanished_event_creates_it_with_its_series() -> None:
    client, now = RecordingClient(), [0.0]
    events = broadcaster(client, now)

    async def go() -> None:
        await events._record(_event())
        client.failures = [NotFoundError(404, "NotFound", "gone")]
        await events._record(_event())

    asyncio.run(go())
    assert [c[0] for c in client.calls] == ["create", "patch", "create"]
    assert client.calls[-1][1]["series"]["count"] == 2


def test_recorder_queues_without_blocking_and_drops_when_full() -> None:
    client, now = RecordingClient(), [0.0]
    events = broadcaster(client, now, max_queued=2)
    recorder = events.recorder("nrop-scheduler")
    assert recorder.reporting_instance == "nrop-scheduler-h"
    for _ in range(3):
        recorder.failed_scheduling(POD, "0/3 nodes are available")
    assert events.dropped == 1 and client.calls == []
    with pytest.raises(ValueError, match="type: Unsupported value"):
        recorder.record(POD, "Error", "X", "Y", "z")

    async def go() -> None:
        events.start()
        await events.close(drain_timeout=5)

    asyncio.run(go())
    assert [c[0] for c in client.calls] == ["create", "patch"]
    assert client.calls[0][1]["reportingController"] == "nrop-scheduler"


def test_close_stops_the_writer_even_when_events_arrive_while_it_writes() -> None:
    # Events submitted while a write is in flight leave the wake-up flag set when the queue
    # drains; closing at that moment must still stop the writer (Python 3.11's wait_for
    # would swallow the cancellation there).
    client = RecordingClient()
    client.create = _yielding(client.create)  # type: ignore[method-assign]
    events = broadcaster(client, [0.0])
    recorder = events.recorder("nrop-scheduler")

    async def go() -> None:
        events.start()
        for i in range(50):
            recorder.record(POD, "Normal", f"Reason{i}", "Binding", "n")
            await asyncio.sleep(0)
        closing = asyncio.create_task(events.close(drain_timeout=5))
        done, _ = await asyncio.wait({closing}, timeout=3)
        assert closing in done, "close() did not stop the writer"

    asyncio.run(go())
    assert len(client.calls) == 50


def _yielding(create: Any) -> Any:
    async def create_after_a_yield(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0)
        return await create(*args, **kwargs)

    return create_after_a_yield


def test_an_event_that_cannot_be_admitted_does_not_stop_the_writer() -> None:
    client = RecordingClient()
    events = broadcaster(client, [0.0])
    bad = _event()
    bad["regarding"]["uid"] = {"not": "hashable"}  # its isomorphic key cannot be a cache key

    async def go() -> None:
        events.start()
        events.submit(bad)
        events.submit(_event(reason="Scheduled"))
        await events.close(drain_timeout=3)

    asyncio.run(go())
    assert [c[1]["reason"] for c in client.calls] == ["Scheduled"]
