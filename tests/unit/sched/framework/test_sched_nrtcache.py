"""Table tests of the NRT caches and of the plugin's cache wiring."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nrop.api import fingerprint
from nrop.api.nrt import NodeResourceTopology
from nrop.api.quantity import parse
from nrop.sched.framework.interface import NRT_RESOURCE, ActionType, ClusterEvent, CycleState, NodeInfo
from nrop.sched.framework.plugins.noderesourcetopology.args import (
    CacheArgs,
    CacheResyncMethod,
    CacheResyncScope,
    ForeignPodsDetectMode,
    InformerMode,
    NodeResourceTopologyMatchArgs,
    ScoringStrategyType,
)
from nrop.sched.framework.plugins.noderesourcetopology.cache import (
    DiscardReservedCache,
    OverReserveCache,
    ParsedNRTs,
    PassthroughCache,
    SchedulerProfiles,
    pod_fingerprint_for_node_topology,
    pods_on_their_way,
    subtract_assumed,
)
from nrop.sched.framework.plugins.noderesourcetopology.filter import (
    filter_with_parsed,
    filter_with_topology,
    parse_topology,
    pod_demand,
)
from nrop.sched.framework.plugins.noderesourcetopology.plugin import NodeResourceTopologyMatch
from nrop.sched.framework.plugins.noderesourcetopology.score import score_with_parsed, score_with_topology
from nrop.sched.framework.podrequests import GUARANTEED as QOS_GUARANTEED

# --- builders ------------------------------------------------------------------------------


def zone(name: str, available: dict[str, str], ztype: str = "Node") -> dict[str, Any]:
    return {
        "name": name,
        "type": ztype,
        "resources": [
            {"name": k, "capacity": v, "allocatable": v, "available": v} for k, v in available.items()
        ],
    }


def nrt_obj(
    name: str = "w0",
    zones: list[dict[str, Any]] | None = None,
    *,
    policy: str = "single-numa-node",
    pfp: str | None = None,
    method: str | None = None,
    annotation: str | None = None,
) -> dict[str, Any]:
    attrs = [
        {"name": "topologyManagerPolicy", "value": policy},
        {"name": "topologyManagerScope", "value": "container"},
    ]
    if pfp is not None:
        attrs.append({"name": "nodeTopologyPodsFingerprint", "value": pfp})
    if method is not None:
        attrs.append({"name": "nodeTopologyPodsFingerprintMethod", "value": method})
    meta: dict[str, Any] = {"name": name}
    if annotation is not None:
        meta["annotations"] = {"topology.node.k8s.io/fingerprint": annotation}
    default_zones = [
        zone("node-0", {"cpu": "4", "memory": "8Gi", "example.com/dev": "1"}),
        zone("node-1", {"cpu": "2", "memory": "8Gi"}),
    ]
    return {"metadata": meta, "zones": default_zones if zones is None else zones, "attributes": attrs}


def a_pod(
    name: str,
    requests: dict[str, str] | None = None,
    *,
    guaranteed: bool = True,
    node: str = "w0",
    phase: str = "Running",
    scheduler: str = "default-scheduler",
    namespace: str = "ns",
) -> dict[str, Any]:
    requests = requests if requests is not None else {"cpu": "1", "memory": "1Gi"}
    resources: dict[str, Any] = {"requests": dict(requests)}
    if guaranteed:
        resources["limits"] = dict(requests)
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [{"name": "c", "resources": resources}]}
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"namespace": namespace, "name": name, "uid": f"uid-{name}"},
        "spec": spec,
        "status": {"phase": phase},
    }


def available(cached: Any) -> dict[str, dict[str, str]]:
    return {z.name: {r.name: str(r.available) for r in z.resources} for z in cached.nrt.zones}


def pfp_of(*names: str) -> str:
    return fingerprint.compute(("ns", n) for n in names)


class Getter:
    """``get_nrt`` over a dict, counting calls."""

    def __init__(self, objs: dict[str, dict[str, Any]] | None = None) -> None:
        self.objs = dict(objs or {})
        self.calls: list[str] = []

    def __call__(self, node_name: str) -> dict[str, Any] | None:
        self.calls.append(node_name)
        return self.objs.get(node_name)


def lister(pods: list[dict[str, Any]]) -> Callable[[], list[dict[str, Any]]]:
    return lambda: list(pods)


def over_reserve(*objs: dict[str, Any], **cache: Any) -> OverReserveCache:
    return OverReserveCache(list(objs) or [nrt_obj()], CacheArgs(**cache))


PROFILES = SchedulerProfiles({"topo-aware"})

# --- Passthrough and DiscardReserved ---------------------------------------------------------


@pytest.mark.parametrize(
    ("objs", "expected_zones"),
    [
        pytest.param({"w0": nrt_obj()}, ["node-0", "node-1"], id="found"),
        pytest.param({}, None, id="missing-passes"),
        pytest.param(
            {"w0": {"metadata": {"name": "w0"}, "zones": [{"name": "node-0"}]}}, None, id="malformed-passes"
        ),
    ],
)
def test_passthrough_reads_every_time(objs: dict[str, Any], expected_zones: list[str] | None) -> None:
    cache = PassthroughCache(Getter(objs))
    cache.reserve("w0", a_pod("p"))
    cached = cache.get_cached_nrt_copy("w0", a_pod("q"))
    assert cached.fresh is True
    assert (None if cached.nrt is None else [z.name for z in cached.nrt.zones]) == expected_zones


def test_discard_reserved_hides_node_until_bound_or_unreserved() -> None:
    cache = DiscardReservedCache(Getter({"w0": nrt_obj(), "w1": nrt_obj("w1")}))
    p, q = a_pod("p"), a_pod("q")
    cache.reserve("w0", p)
    cache.reserve("w0", q)
    assert (cache.get_cached_nrt_copy("w0", p).nrt, cache.get_cached_nrt_copy("w0", p).fresh) == (None, False)
    assert cache.get_cached_nrt_copy("w1", p).fresh is True
    cache.post_bind("w0", p)
    assert cache.get_cached_nrt_copy("w0", p).fresh is False
    cache.unreserve("w0", q)
    after = cache.get_cached_nrt_copy("w0", p)
    assert after.fresh is True and after.nrt is not None
    cache.unreserve("w9", q)  # unknown node: nothing to do
    cache.node_maybe_over_reserved("w0", p)
    assert cache.get_cached_nrt_copy("w0", p).fresh is True


# --- OverReserve: assumed pods ---------------------------------------------------------------


def test_reserve_over_allocates_on_all_zones_clamped_at_zero() -> None:
    socket = zone("socket-0", {"cpu": "6"}, ztype="Socket")
    cache = over_reserve(nrt_obj(zones=[*nrt_obj()["zones"], socket]))
    cache.reserve("w0", a_pod("p", {"cpu": "3", "memory": "1Gi"}))
    assert available(cache.get_cached_nrt_copy("w0", a_pod("x"))) == {
        "node-0": {"cpu": "1", "memory": "7Gi", "example.com/dev": "1"},
        "node-1": {"cpu": "0", "memory": "7Gi"},
        "socket-0": {"cpu": "3"},
    }
    cache.reserve("w0", a_pod("q", {"example.com/dev": "1"}, guaranteed=False))
    assert available(cache.get_cached_nrt_copy("w0", a_pod("x"))) == {
        "node-0": {"cpu": "1", "memory": "7Gi", "example.com/dev": "0"},
        "node-1": {"cpu": "0", "memory": "7Gi"},
        "socket-0": {"cpu": "3"},
    }
    cache.unreserve("w0", a_pod("p"))
    assert available(cache.get_cached_nrt_copy("w0", a_pod("x")))["node-1"] == {"cpu": "2", "memory": "8Gi"}


def test_reserve_uses_effective_request_and_replaces_same_pod() -> None:
    cache = over_reserve()
    pod = a_pod("p", {"cpu": "1", "memory": "1Gi"})
    pod["spec"]["initContainers"] = [
        {"name": "i", "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "2"}}}
    ]
    cache.reserve("w0", pod)
    cache.reserve("w0", pod)
    assert available(cache.get_cached_nrt_copy("w0", a_pod("x")))["node-0"]["cpu"] == "2"
    cache.post_bind("w0", pod)  # the assumed request stays until a resync
    assert available(cache.get_cached_nrt_copy("w0", a_pod("x")))["node-0"]["cpu"] == "2"


def test_copies_do_not_leak_into_the_store() -> None:
    cache = over_reserve()
    first = cache.get_cached_nrt_copy("w0", a_pod("x"))
    assert first.nrt is not None
    first.nrt.zones.clear()
    assert available(cache.get_cached_nrt_copy("w0", a_pod("x")))["node-0"]["cpu"] == "4"


def test_nrt_created_after_start_is_never_cached() -> None:
    cache = over_reserve(nrt_obj("w0"))
    cache.on_nrt_event("ADDED", nrt_obj("w1"))
    cache.on_nrt_event("MODIFIED", nrt_obj("w1", policy="none"))
    cache.reserve("w1", a_pod("p"))
    cached = cache.get_cached_nrt_copy("w1", a_pod("x"))
    assert (cached.nrt, cached.fresh) == (None, True)
    report = cache.resync(Getter({"w1": nrt_obj("w1", pfp=pfp_of())}), lister([]))
    assert report.flushed == ()


# --- OverReserve: resync ------------------------------------------------------------------------


def test_resync_without_dirty_nodes_reads_nothing() -> None:
    cache = over_reserve()
    getter = Getter({"w0": nrt_obj()})
    listed: list[bool] = []

    def list_pods() -> list[dict[str, Any]]:
        listed.append(True)
        return []

    cache.reserve("w0", a_pod("p"))
    report = cache.resync(getter, list_pods)
    assert (report.flushed, dict(report.skipped), getter.calls, listed) == ((), {}, [], [])


def test_resync_flushes_on_fingerprint_match_only() -> None:
    cache = over_reserve()
    pods = [a_pod("a"), a_pod("b")]
    cache.reserve("w0", a_pod("new", {"cpu": "3", "memory": "1Gi"}))
    cache.node_maybe_over_reserved("w0", a_pod("x"))
    fresh_obj = nrt_obj(
        zones=[zone("node-0", {"cpu": "1"})], pfp=pfp_of("a")
    )  # exporter has not seen "b" yet

    report = cache.resync(Getter({"w0": fresh_obj}), lister(pods))
    assert report.flushed == ()
    assert dict(report.skipped) == {"w0": "NodeTopology podset fingerprint mismatch"}
    assert cache.generation == 0
    assert cache.desynced_nodes().maybe_over_reserved == ("w0",)
    assert (
        available(cache.get_cached_nrt_copy("w0", a_pod("x")))["node-0"]["cpu"] == "1"
    )  # still over-reserved

    fresh_obj = nrt_obj(zones=[zone("node-0", {"cpu": "1"})], pfp=pfp_of("a", "b"))
    report = cache.resync(Getter({"w0": fresh_obj}), lister(pods))
    assert (report.flushed, report.generation, cache.generation) == (("w0",), 1, 1)
    assert len(cache.desynced_nodes()) == 0
    cached = cache.get_cached_nrt_copy("w0", a_pod("x"))
    assert (available(cached), cached.generation) == (
        {"node-0": {"cpu": "1"}},
        1,
    )  # new object, nothing assumed


@pytest.mark.parametrize(
    ("obj", "pods", "reason"),
    [
        pytest.param(None, [a_pod("a")], "failed to get NodeTopology", id="no-object"),
        pytest.param(
            nrt_obj(pfp=pfp_of("a")),
            [a_pod("a", node="w1")],
            "cannot find any pod for node",
            id="no-pod-on-node",
        ),
        pytest.param(
            nrt_obj(), [a_pod("a")], "missing NodeTopology podset fingerprint data", id="no-fingerprint"
        ),
        pytest.param(
            nrt_obj(pfp=""),
            [a_pod("a")],
            "missing NodeTopology podset fingerprint data",
            id="empty-fingerprint",
        ),
        pytest.param(
            nrt_obj(pfp="pfp0v0011234"),
            [a_pod("a")],
            "checking NodeTopology podset fingerprint: malformed fingerprint",
            id="malformed",
        ),
        pytest.param(
            nrt_obj(pfp="pfp0v0021234567812345678"),
            [a_pod("a")],
            "checking NodeTopology podset fingerprint: incompatible version",
            id="other-version",
        ),
        pytest.param(
            nrt_obj(pfp=pfp_of("a")),
            [a_pod("a", phase="Pending")],
            "cannot find any pod for node",
            id="pending-pods-ignored",
        ),
    ],
)
def test_resync_keeps_node_dirty(obj: dict[str, Any] | None, pods: list[dict[str, Any]], reason: str) -> None:
    cache = over_reserve()
    cache.node_maybe_over_reserved("w0", a_pod("x"))
    report = cache.resync(Getter({"w0": obj} if obj else {}), lister(pods))
    assert (report.flushed, dict(report.skipped)) == ((), {"w0": reason})
    assert cache.desynced_nodes().maybe_over_reserved == ("w0",)


@pytest.mark.parametrize(
    ("pod", "arriving"),
    [
        pytest.param(a_pod("a", node=""), True, id="unbound"),
        pytest.param(a_pod("a", phase="Pending"), True, id="bound-pending"),
        pytest.param(
            {"metadata": {"namespace": "ns", "name": "a"}, "spec": {"nodeName": "w0"}}, True, id="no-phase"
        ),
        pytest.param(a_pod("a"), False, id="running"),
        pytest.param(a_pod("a", phase="Failed"), False, id="rejected-by-kubelet"),
        pytest.param(a_pod("a", phase="Succeeded"), False, id="ended"),
    ],
)
def test_pods_on_their_way(pod: dict[str, Any], arriving: bool) -> None:
    assert pods_on_their_way([pod]) == ({"ns/a"} if arriving else set())


@pytest.mark.parametrize(
    ("reserved", "reason"),
    [
        pytest.param(a_pod("new", node=""), "reserved pod ns/new is not running yet", id="not-bound-yet"),
        pytest.param(
            a_pod("new", phase="Pending"), "reserved pod ns/new is not running yet", id="bound-pending"
        ),
        pytest.param(a_pod("new"), None, id="running"),
        pytest.param(None, None, id="deleted"),
    ],
)
def test_resync_waits_for_a_reserved_pod_on_its_way(
    reserved: dict[str, Any] | None, reason: str | None
) -> None:
    # Neither fingerprint counts a pod on its way: the exporter's (published before the
    # kubelet had it) nor the pod listing's (Pending pods are left out). Flushing then would
    # forget the reservation while nothing else accounts for the pod.
    cache = over_reserve()
    cache.reserve("w0", a_pod("new", {"cpu": "3", "memory": "1Gi"}))
    cache.node_maybe_over_reserved("w0", a_pod("x"))
    listed = [a_pod("a")] + ([reserved] if reserved is not None else [])
    running = [p for p in listed if p["status"]["phase"] == "Running" and p["spec"].get("nodeName")]
    getter = Getter({"w0": nrt_obj(pfp=pfp_of(*(p["metadata"]["name"] for p in running)))})
    report = cache.resync(getter, lister(listed))
    if reason is None:
        assert report.flushed == ("w0",)
        return
    assert (report.flushed, dict(report.skipped), getter.calls) == ((), {"w0": reason}, [])
    assert available(cache.get_cached_nrt_copy("w0", a_pod("x")))["node-0"]["cpu"] == "1"


BURSTABLE = a_pod("burst", {"cpu": "1"}, guaranteed=False)
GUARANTEED = a_pod("guar")
DEVICE = a_pod("dev", {"example.com/dev": "1"}, guaranteed=False)
SUCCEEDED = a_pod("done", phase="Succeeded")


@pytest.mark.parametrize(
    ("method", "attr_method", "informer", "expected_pods"),
    [
        pytest.param(
            CacheResyncMethod.AUTODETECT,
            "with-exclusive-resources",
            InformerMode.DEDICATED,
            ("dev", "done", "guar"),
            id="autodetect-exclusive",
        ),
        pytest.param(
            CacheResyncMethod.AUTODETECT,
            "all",
            InformerMode.DEDICATED,
            ("burst", "dev", "done", "guar"),
            id="autodetect-all",
        ),
        pytest.param(
            CacheResyncMethod.AUTODETECT,
            None,
            InformerMode.DEDICATED,
            ("burst", "dev", "done", "guar"),
            id="autodetect-no-method-attr",
        ),
        pytest.param(
            CacheResyncMethod.ALL,
            "with-exclusive-resources",
            InformerMode.DEDICATED,
            ("burst", "dev", "done", "guar"),
            id="all-overrides-attr",
        ),
        pytest.param(
            CacheResyncMethod.ONLY_EXCLUSIVE_RESOURCES,
            None,
            InformerMode.DEDICATED,
            ("dev", "done", "guar"),
            id="only-exclusive",
        ),
        pytest.param(
            CacheResyncMethod.ONLY_EXCLUSIVE_RESOURCES,
            None,
            InformerMode.SHARED,
            ("dev", "guar"),
            id="shared-running-only",
        ),
        pytest.param(
            CacheResyncMethod.ALL, None, InformerMode.SHARED, ("burst", "dev", "guar"), id="shared-all"
        ),
    ],
)
def test_resync_fingerprint_covers_pods_by_method_and_informer(
    method: CacheResyncMethod, attr_method: str | None, informer: InformerMode, expected_pods: tuple[str, ...]
) -> None:
    cache = over_reserve(resync_method=method, informer_mode=informer)
    cache.node_maybe_over_reserved("w0", a_pod("x"))
    obj = nrt_obj(pfp=pfp_of(*expected_pods), method=attr_method)
    report = cache.resync(
        Getter({"w0": obj}), lister([BURSTABLE, GUARANTEED, DEVICE, SUCCEEDED, a_pod("elsewhere", node="w1")])
    )
    assert report.flushed == ("w0",), report.skipped


def test_legacy_annotation_always_covers_all_pods() -> None:
    obj = nrt_obj(annotation=pfp_of("burst", "guar"))
    only_exclusive = CacheResyncMethod.ONLY_EXCLUSIVE_RESOURCES
    assert pod_fingerprint_for_node_topology(NodeResourceTopology.from_dict(obj), only_exclusive) == (
        pfp_of("burst", "guar"),
        False,
    )
    assert pod_fingerprint_for_node_topology(NodeResourceTopology.from_dict(nrt_obj()), only_exclusive) == (
        "",
        False,
    )
    cache = over_reserve(resync_method=only_exclusive)
    cache.node_maybe_over_reserved("w0", a_pod("x"))
    assert cache.resync(Getter({"w0": obj}), lister([BURSTABLE, GUARANTEED])).flushed == ("w0",)


def test_attribute_wins_over_annotation() -> None:
    obj = NodeResourceTopology.from_dict(
        nrt_obj(pfp="pfp0v001aaaaaaaaaaaaaaaa", annotation="pfp0v001bbbbbbbbbbbbbbbb")
    )
    assert pod_fingerprint_for_node_topology(obj, CacheResyncMethod.AUTODETECT) == (
        "pfp0v001aaaaaaaaaaaaaaaa",
        False,
    )


def test_flush_bumps_generation_once_per_resync() -> None:
    cache = over_reserve(nrt_obj("w0"), nrt_obj("w1"))
    cache.node_maybe_over_reserved("w0", a_pod("x"))
    cache.node_maybe_over_reserved("w1", a_pod("x"))
    objs = {"w0": nrt_obj("w0", pfp=pfp_of("a")), "w1": nrt_obj("w1", pfp=pfp_of("b"))}
    report = cache.resync(Getter(objs), lister([a_pod("a"), a_pod("b", node="w1")]))
    assert (report.flushed, cache.generation) == (("w0", "w1"), 1)


# --- OverReserve: configuration changes ------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "obj", "flushed"),
    [
        pytest.param("MODIFIED", nrt_obj(policy="restricted"), ("w0",), id="policy-changed"),
        pytest.param(
            "MODIFIED",
            {
                **nrt_obj(),
                "attributes": [
                    *nrt_obj()["attributes"],
                    {"name": "topologyManagerMaxNUMANodes", "value": "4"},
                ],
            },
            ("w0",),
            id="max-numa-changed",
        ),
        pytest.param("MODIFIED", nrt_obj(zones=[zone("node-0", {"cpu": "1"})]), (), id="resources-only"),
        pytest.param("ADDED", nrt_obj(policy="restricted"), (), id="added-ignored"),
        pytest.param("DELETED", nrt_obj(policy="restricted"), (), id="deleted-ignored"),
        pytest.param("MODIFIED", nrt_obj("w9", policy="restricted"), (), id="unknown-node"),
    ],
)
def test_config_change_flushes_without_fingerprint(
    event: str, obj: dict[str, Any], flushed: tuple[str, ...]
) -> None:
    cache = over_reserve()
    cache.reserve("w0", a_pod("p"))
    cache.on_nrt_event(event, obj)
    # The object the resync reads has no fingerprint at all: only a config change flushes it.
    report = cache.resync(Getter({"w0": nrt_obj(policy="restricted"), "w9": nrt_obj("w9")}), lister([]))
    assert report.flushed == flushed
    assert cache.generation == len(flushed)


def test_config_change_wins_over_failed_dirty_check() -> None:
    cache = over_reserve()
    cache.node_maybe_over_reserved("w0", a_pod("x"))
    cache.on_nrt_event("MODIFIED", nrt_obj(policy="none"))
    report = cache.resync(Getter({"w0": nrt_obj(policy="none")}), lister([a_pod("a")]))
    assert (report.flushed, dict(report.skipped)) == (("w0",), {})
    assert len(cache.desynced_nodes()) == 0


# --- OverReserve: foreign pods -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "pod", "foreign"),
    [
        pytest.param(ForeignPodsDetectMode.ALL, a_pod("f"), True, id="all-other-scheduler"),
        pytest.param(
            ForeignPodsDetectMode.ALL, a_pod("f", {"cpu": "1"}, guaranteed=False), True, id="all-burstable"
        ),
        pytest.param(ForeignPodsDetectMode.ALL, a_pod("f", scheduler="topo-aware"), False, id="own-profile"),
        pytest.param(ForeignPodsDetectMode.ALL, a_pod("f", node=""), False, id="unbound"),
        pytest.param(
            ForeignPodsDetectMode.ONLY_EXCLUSIVE_RESOURCES, a_pod("f"), True, id="exclusive-guaranteed"
        ),
        pytest.param(
            ForeignPodsDetectMode.ONLY_EXCLUSIVE_RESOURCES,
            a_pod("f", {"cpu": "1"}, guaranteed=False),
            False,
            id="exclusive-burstable",
        ),
        pytest.param(
            ForeignPodsDetectMode.ONLY_EXCLUSIVE_RESOURCES, DEVICE, True, id="exclusive-device-in-nrt"
        ),
        pytest.param(
            ForeignPodsDetectMode.ONLY_EXCLUSIVE_RESOURCES,
            a_pod("f", {"example.com/gpu": "1"}, guaranteed=False),
            False,
            id="exclusive-device-not-in-nrt",
        ),
    ],
)
def test_foreign_pods_by_mode(mode: ForeignPodsDetectMode, pod: dict[str, Any], foreign: bool) -> None:
    cache = over_reserve(foreign_pods_detect=mode)
    assert cache.is_foreign_pod(pod, PROFILES) is foreign
    cache.on_pod_event(pod, PROFILES)
    cached = cache.get_cached_nrt_copy("w0", a_pod("x"))
    assert (cached.fresh, cached.nrt is None) == (not foreign, foreign)
    assert cache.desynced_nodes().maybe_over_reserved == (("w0",) if foreign else ())


def test_foreign_pod_on_untracked_node_is_ignored_and_resync_clears_foreign() -> None:
    cache = over_reserve()
    cache.on_pod_event(a_pod("f", node="w9"), PROFILES)
    assert cache.desynced_nodes().maybe_over_reserved == ()
    cache.on_pod_event(a_pod("f"), PROFILES)
    assert cache.get_cached_nrt_copy("w0", a_pod("x")).fresh is False
    cache.resync(Getter({"w0": nrt_obj(pfp=pfp_of("f"))}), lister([a_pod("f")]))
    assert cache.get_cached_nrt_copy("w0", a_pod("x")).fresh is True


# --- the plugin's cache wiring -------------------------------------------------------------------


class Handle:
    def __init__(
        self, nrts: list[dict[str, Any]] | None = None, pods: list[dict[str, Any]] | None = None
    ) -> None:
        self.nrts = {o["metadata"]["name"]: o for o in nrts or [nrt_obj()]}
        self.pods = list(pods or [])
        self.pod_callbacks: list[Callable[[str, dict[str, Any]], None]] = []
        self.nrt_callbacks: list[Callable[[str, dict[str, Any]], None]] = []

    profile_name = "topo-aware"

    def scheduler_names(self) -> frozenset[str]:
        return frozenset({"topo-aware"})

    def list_pods(self) -> list[dict[str, Any]]:
        return list(self.pods)

    def get_nrt(self, node_name: str) -> dict[str, Any] | None:
        return self.nrts.get(node_name)

    def list_nrts(self) -> list[dict[str, Any]]:
        return list(self.nrts.values())

    def on_pod_event(self, callback: Callable[[str, dict[str, Any]], None]) -> None:
        self.pod_callbacks.append(callback)

    def on_nrt_event(self, callback: Callable[[str, dict[str, Any]], None]) -> None:
        self.nrt_callbacks.append(callback)

    def now(self) -> float:
        return 0.0


NODE = NodeInfo.of(
    {
        "metadata": {"name": "w0"},
        "status": {"allocatable": {"cpu": "6", "memory": "16Gi", "example.com/dev": "1"}},
    }
)


def make(handle: Handle, profiles: SchedulerProfiles | None = None, **args: Any) -> NodeResourceTopologyMatch:
    return NodeResourceTopologyMatch(
        NodeResourceTopologyMatchArgs(**args), handle, profiles=profiles or SchedulerProfiles()
    )


@pytest.mark.parametrize(
    ("args", "period", "reserve_hides", "reserve_subtracts"),
    [
        pytest.param({}, None, False, False, id="passthrough-by-default"),
        pytest.param(
            {"cache_resync_period_seconds": -3}, None, False, False, id="negative-period-passthrough"
        ),
        pytest.param(
            {"discard_reserved_nodes": True, "cache_resync_period_seconds": 5},
            None,
            True,
            False,
            id="discard-takes-precedence",
        ),
        pytest.param({"cache_resync_period_seconds": 5}, 5.0, False, True, id="overreserve"),
    ],
)
def test_plugin_chooses_cache(
    args: dict[str, Any], period: float | None, reserve_hides: bool, reserve_subtracts: bool
) -> None:
    plugin = make(Handle(), **args)
    assert plugin.resync_period() == period
    assert (plugin.resync() is None) is (period is None)
    state = CycleState()
    pod = a_pod("p", {"cpu": "3", "memory": "1Gi"}, scheduler="topo-aware")
    assert plugin.reserve(state, pod, "w0").ok
    # A 2-cpu container fits node-0 (4 cpus) unless 3 cpus are assumed taken from every zone.
    status = plugin.filter(state, a_pod("next", {"cpu": "2", "memory": "1Gi"}), NODE)
    if reserve_hides:
        assert status.reasons == ("invalid node topology data",)
    elif reserve_subtracts:
        assert status.reasons == ("cannot align container",)
    else:
        assert status.ok
    plugin.unreserve(state, pod, "w0")
    assert plugin.filter(state, a_pod("next", {"cpu": "2", "memory": "1Gi"}), NODE).ok


@pytest.mark.parametrize(
    ("cache", "nrt_subscribed", "pod_subscribed", "registered"),
    [
        pytest.param(CacheArgs(), True, True, {"topo-aware"}, id="defaults"),
        pytest.param(
            CacheArgs(resync_scope=CacheResyncScope.ONLY_RESOURCES),
            False,
            True,
            {"topo-aware"},
            id="only-resources-no-watch",
        ),
        pytest.param(
            CacheArgs(foreign_pods_detect=ForeignPodsDetectMode.NONE), True, False, set(), id="detection-off"
        ),
    ],
)
def test_plugin_subscriptions(
    cache: CacheArgs, nrt_subscribed: bool, pod_subscribed: bool, registered: set[str]
) -> None:
    handle = Handle()
    profiles = SchedulerProfiles()
    make(handle, profiles, cache_resync_period_seconds=5, cache=cache)
    assert (bool(handle.nrt_callbacks), bool(handle.pod_callbacks), set(profiles.names())) == (
        nrt_subscribed,
        pod_subscribed,
        registered,
    )


def test_passthrough_subscribes_to_nothing() -> None:
    handle = Handle()
    profiles = SchedulerProfiles()
    make(handle, profiles)
    assert (handle.nrt_callbacks, handle.pod_callbacks, profiles.names()) == ([], [], frozenset())


def test_plugin_foreign_pod_makes_node_unschedulable_until_resync() -> None:
    handle = Handle(pods=[a_pod("f")])
    plugin = make(handle, cache_resync_period_seconds=5)
    state = CycleState()
    guaranteed = a_pod("g", {"cpu": "1", "memory": "1Gi"})
    for callback in handle.pod_callbacks:
        callback("ADDED", a_pod("mine", scheduler="topo-aware"))
    assert plugin.filter(state, guaranteed, NODE).ok
    for callback in handle.pod_callbacks:
        callback("ADDED", a_pod("f"))
    assert plugin.filter(state, guaranteed, NODE).reasons == ("invalid node topology data",)
    assert plugin.score(state, guaranteed, NODE)[0] == 0
    handle.nrts["w0"] = nrt_obj(pfp=pfp_of("f"))
    report = plugin.resync()
    assert report is not None and report.flushed == ("w0",)
    assert plugin.filter(state, guaranteed, NODE).ok


def test_plugin_config_change_event_flushes() -> None:
    handle = Handle()
    plugin = make(handle, cache_resync_period_seconds=5)
    state = CycleState()
    big = a_pod("big", {"cpu": "5", "memory": "1Gi"})
    assert plugin.filter(state, big, NODE).reasons == ("cannot align container",)
    handle.nrts["w0"] = nrt_obj(policy="best-effort")
    for callback in handle.nrt_callbacks:
        callback("MODIFIED", handle.nrts["w0"])
    report = plugin.resync()
    assert report is not None and report.flushed == ("w0",)
    assert plugin.filter(state, big, NODE).ok


def test_events_to_register() -> None:
    assert make(Handle()).events_to_register() == [
        ClusterEvent("Pod", ActionType.DELETE),
        ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
        ClusterEvent(NRT_RESOURCE, ActionType.ADD | ActionType.UPDATE),
    ]
    assert NodeResourceTopologyMatch.name == "NodeResourceTopologyMatch"
    assert (
        NodeResourceTopologyMatch.parse_args({"cacheResyncPeriodSeconds": 5}, "a").cache_resync_period_seconds
        == 5
    )


def test_quantities_stay_exact() -> None:
    cache = over_reserve(nrt_obj(zones=[zone("node-0", {"cpu": "1500m"})]))
    cache.reserve("w0", a_pod("p", {"cpu": "250m"}))
    cached = cache.get_cached_nrt_copy("w0", a_pod("x"))
    assert cached.nrt is not None
    assert cached.nrt.zones[0].resources[0].available == parse("1250m")


# --- summed over-reservation and memoized decoding -------------------------------------------


def clamp_each_pod(nrt: NodeResourceTopology, pods: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    """The former algorithm: each pod's request taken off every zone in turn, clamping each time."""
    left = {z.name: {r.name: r.available for r in z.resources} for z in nrt.zones}
    for requests in pods:
        for amounts in left.values():
            for name, amount in requests.items():
                if name in amounts:
                    after = amounts[name] - parse(amount)
                    amounts[name] = parse("0") if after.sign() < 0 else after
    return {zone_name: {k: str(v) for k, v in amounts.items()} for zone_name, amounts in left.items()}


@pytest.mark.parametrize(
    "pods",
    [
        pytest.param([], id="nothing-assumed"),
        pytest.param([{"cpu": "1"}], id="one-pod"),
        pytest.param([{"cpu": "3"}, {"cpu": "3"}], id="each-overflows-one-zone"),
        pytest.param([{"cpu": "5"}, {"cpu": "250m"}], id="first-already-clamps"),
        pytest.param([{"cpu": "1500m", "memory": "9Gi"}, {"memory": "1Gi"}], id="memory-overflow"),
        pytest.param([{"example.com/dev": "1"}, {"example.com/dev": "1"}], id="device-twice"),
        pytest.param([{"cpu": "0"}, {"other.io/x": "2"}], id="zero-and-unknown"),
    ],
)
def test_summed_subtraction_equals_per_pod_clamping(pods: list[dict[str, str]]) -> None:
    obj = nrt_obj()
    cache = over_reserve(obj)
    for index, requests in enumerate(pods):
        cache.reserve("w0", a_pod(f"p{index}", requests, guaranteed=False))
    stored = NodeResourceTopology.from_dict(obj)
    assert available(cache.get_cached_nrt_copy("w0", a_pod("x"))) == clamp_each_pod(stored, pods)


def test_subtract_assumed_shares_untouched_zones() -> None:
    nrt = NodeResourceTopology.from_dict(nrt_obj())
    view = subtract_assumed(nrt, {"example.com/dev": parse("1")})
    assert view.zones[0] is not nrt.zones[0]
    assert view.zones[1] is nrt.zones[1]
    assert str(nrt.zones[0].resources[2].available) == "1"


def test_views_follow_reserve_unreserve_and_flush() -> None:
    cache = over_reserve()
    x = a_pod("x")
    first = cache.get_cached_nrt_copy("w0", x).nrt
    second = cache.get_cached_nrt_copy("w0", x).nrt
    assert first is not None and second is not None
    assert first is not second and first.zones == second.zones
    cache.reserve("w0", a_pod("p", {"cpu": "1", "memory": "1Gi"}))
    assert available(cache.get_cached_nrt_copy("w0", x))["node-0"]["cpu"] == "3"
    cache.unreserve("w0", a_pod("p"))
    assert available(cache.get_cached_nrt_copy("w0", x))["node-0"]["cpu"] == "4"
    cache.reserve("w0", a_pod("p", {"cpu": "1", "memory": "1Gi"}))
    cache.flush_nodes([NodeResourceTopology.from_dict(nrt_obj(zones=[zone("node-0", {"cpu": "8"})]))])
    assert available(cache.get_cached_nrt_copy("w0", x)) == {"node-0": {"cpu": "8"}}


def versioned(version: str, cpu: str) -> dict[str, Any]:
    obj = nrt_obj(zones=[zone("node-0", {"cpu": cpu})])
    obj["metadata"]["resourceVersion"] = version
    return obj


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        pytest.param(versioned("1", "4"), versioned("1", "4"), True, id="same-version-reused"),
        pytest.param(versioned("1", "4"), versioned("2", "2"), False, id="new-version-decoded"),
        pytest.param(nrt_obj(), nrt_obj(), False, id="no-version-always-decoded"),
    ],
)
def test_parsed_nrts_memoize_by_resource_version(
    first: dict[str, Any], second: dict[str, Any], same: bool
) -> None:
    parsed = ParsedNRTs()
    one, two = parsed.get(first), parsed.get(second)
    assert one is not None and two is not None
    assert (one is two) is same
    assert str(two.zones[0].resources[0].available) == second["zones"][0]["resources"][0]["available"]


def test_passthrough_reuses_decoded_zones_until_the_version_changes() -> None:
    objs = {"w0": versioned("1", "4")}
    cache = PassthroughCache(objs.get)
    first = cache.get_cached_nrt_copy("w0", a_pod("x")).nrt
    again = cache.get_cached_nrt_copy("w0", a_pod("x")).nrt
    assert first is not None and again is not None
    assert first is not again and first.zones[0] is again.zones[0]
    objs["w0"] = versioned("2", "2")
    assert available(cache.get_cached_nrt_copy("w0", a_pod("x"))) == {"node-0": {"cpu": "2"}}


def two_container_pod() -> dict[str, Any]:
    pod = a_pod("big", {"cpu": "2", "memory": "1Gi"})
    pod["spec"]["containers"].append(dict(pod["spec"]["containers"][0], name="d"))
    return pod


@pytest.mark.parametrize("strategy", list(ScoringStrategyType), ids=lambda s: s.value)
def test_parsed_topology_is_reusable_across_calls(strategy: ScoringStrategyType) -> None:
    """Container scope takes requests off its NUMA nodes: the memoized list must not change."""
    nrt = NodeResourceTopology.from_dict(nrt_obj())
    topology = parse_topology(nrt)
    before = [node.copy() for node in topology.numa_nodes]
    info = NodeInfo.of(
        {"metadata": {"name": "w0"}, "status": {"allocatable": {"cpu": "6", "memory": "16Gi"}}}
    )
    pod = two_container_pod()
    demand = pod_demand(pod)
    verdicts = {filter_with_parsed(demand, QOS_GUARANTEED, info, topology).ok for _ in range(2)}
    scores = {score_with_parsed(demand, QOS_GUARANTEED, topology, strategy, {}) for _ in range(2)}
    assert verdicts == {filter_with_topology(pod, QOS_GUARANTEED, info, nrt).ok}
    assert scores == {score_with_topology(pod, QOS_GUARANTEED, nrt, strategy, {})}
    assert list(topology.numa_nodes) == before
