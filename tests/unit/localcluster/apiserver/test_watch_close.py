"""A watch that ends at its timeout: the events queued while its last frames were written still go
out, before the closing bookmark, so a client resuming from that bookmark misses nothing."""

from __future__ import annotations

import asyncio

from nrop.localcluster.apiserver import watching
from nrop.localcluster.apiserver.store import Store

CMS = ("", "configmaps")


def _cm(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}


def _bookmark(rv: int, initial_end: bool) -> dict:
    return {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": str(rv)}}


async def _watch_with_a_slow_write(store: Store) -> list[tuple[str, str]]:
    """A watch from now, timing out after 0.2 s: its first event comes live, and while the
    consumer writes it (longer than the timeout) two more objects are created."""
    since = str(store.rv)
    req = watching.WatchRequest(
        CMS, "ns", lambda obj: True, resource_version=since, allow_bookmarks=True, timeout=0.2
    )
    seen: list[tuple[str, str]] = []

    async def first_write() -> None:
        await asyncio.sleep(0.05)
        store.create(CMS, _cm("first"))

    writer = asyncio.create_task(first_write())
    async for frame in watching.stream(store, req, _bookmark):
        meta = frame.obj["metadata"]
        seen.append((frame.type, meta.get("name") or meta["resourceVersion"]))
        if len(seen) == 1:
            store.create(CMS, _cm("second"))
            store.create(CMS, _cm("third"))
            await asyncio.sleep(0.3)  # other requests run while a response is written
    await writer
    return seen


def test_events_queued_at_the_timeout_go_out_before_the_closing_bookmark() -> None:
    store = Store()
    seen = asyncio.run(_watch_with_a_slow_write(store))
    assert seen == [("ADDED", "first"), ("ADDED", "second"), ("ADDED", "third"), ("BOOKMARK", str(store.rv))]


async def _watch_past_a_due_bookmark(store: Store) -> list[str]:
    """A watch with no timeout and a bookmark due every 50 ms: while the consumer writes the first
    event, two more are queued and the bookmark falls due; both events still come, first."""
    req = watching.WatchRequest(
        CMS,
        "ns",
        lambda obj: True,
        resource_version=str(store.rv),
        allow_bookmarks=True,
        bookmark_interval=0.05,
    )
    seen: list[str] = []

    async def first_write() -> None:
        await asyncio.sleep(0.01)
        store.create(CMS, _cm("first"))

    writer = asyncio.create_task(first_write())
    async for frame in watching.stream(store, req, _bookmark):
        seen.append(frame.obj["metadata"].get("name") or "BOOKMARK")
        if len(seen) == 1:
            store.create(CMS, _cm("second"))
            store.create(CMS, _cm("third"))
            await asyncio.sleep(0.2)
        if "third" in seen:
            break
    await writer
    return seen


def test_a_due_bookmark_waits_for_the_queued_events_and_the_watch_goes_on() -> None:
    seen = asyncio.run(asyncio.wait_for(_watch_past_a_due_bookmark(Store()), timeout=5))
    assert seen[:3] == ["first", "second", "third"]
