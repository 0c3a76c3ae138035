"""Private glue of the accounting, host-level, cache, stall, fundamentals, preemption and
scheduler-removal families (serial/test_{resource_accounting,resource_hostlevel,scheduler_cache,
scheduler_cache_stall,non_regression,non_regression_fundamentals,workload_unschedulable,
priority_based_placement,scheduler_removal}.py).

The rules themselves live once in the suite library: resource arithmetic in
``nrop.suite.e2e.resourcelist``, NRT reads and filters in ``nrop.suite.e2e.nrt.topologies``, NRT comparisons in
``nrop.suite.e2e.nrt.compare`` and ``nrop.suite.e2e.nrt.consumed``, padding pods in
``nrop.suite.e2e.padding``, test objects and QoS in ``nrop.suite.e2e.objects``, event predicates in
``nrop.suite.e2e.scheduling``, the base load in ``nrop.suite.e2e.baseload``. What stays here is how
these specs use them over plain dict manifests and the suite's ``Kube`` client: NRT reads,
event checks, operator-object reads. Waiting goes through ``nrop.suite.e2e.wait.waiters`` and
``nrop.suite.e2e.nrt.waiters``, each call site with its upstream timeout and interval.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from nrop.api.durations import parse_duration
from nrop.api.fielderrors import go_quote
from nrop.api.quantity import Quantity, coerce
from nrop.suite import (
    Kube,
    baseload,
    fixture,
    nrtcompare,
    nrtconsumed,
    nrtupdates,
    objects,
    scheduling,
    waiters,
)
from nrop.suite import kube as k8s
from nrop.suite import nrt as e2enrt
from nrop.suite import padding as e2epad
from nrop.suite import resourcelist as rl
from nrop.suite.e2e.kube import Manifest

T = TypeVar("T")
log = logging.getLogger(__name__)

ResList = rl.ResourceList

GIB = 1024**3

# ----------------------------------------------------------------------------- NRT data


def zone_resources(zone: Mapping[str, Any], which: str = "available") -> ResList:
    return {str(r["name"]): coerce(r[which]) for r in zone.get("resources") or ()}


def zones(nrt: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(nrt.get("zones") or ())


def find_from_list(nrts: Iterable[Manifest], name: str) -> Manifest:
    """``FindFromList`` with its error asserted: the NRT called ``name``."""
    nrt = e2enrt.find(nrts, name)
    if nrt is None:
        raise AssertionError(f"failed to find NRT for {name!r}")
    return nrt


def pop_node_name(names: set[str]) -> str:
    """``PopNodeName`` (:func:`nrop.suite.e2e.fixture.pop_node_name`) with its ``ok`` asserted."""
    name = fixture.pop_node_name(names)
    if name is None:
        raise AssertionError("cannot select a target node among no candidates")
    return name


def nrt_to_string(nrt: Mapping[str, Any]) -> str:
    parts = [f"NRT {e2enrt.nrt_name(nrt)} rv={nrt['metadata'].get('resourceVersion')}"]
    parts.extend(f"  {zone['name']}: {rl.to_string(zone_resources(zone))}" for zone in zones(nrt))
    return "\n".join(parts)


def filter_nodes(
    fxt: Any, nrt_list: Sequence[Manifest], nodes: int, numa_zones: int, required: Mapping[str, Quantity]
) -> list[Manifest]:
    """Upstream ``filterNodes`` (host-level and specific-resources specs): nodes with exactly
    ``numa_zones`` zones, one of which fits the NUMA-affine part of ``required``; the spec is
    skipped when fewer than ``nodes`` are left."""
    log.info("filtering available nodes with at least %d NUMA zones", numa_zones)
    candidates = e2enrt.filter_zone_count_equal(nrt_list, numa_zones)
    if len(candidates) < nodes:
        fxt.skip(f"not enough nodes with 2 NUMA Zones: found {len(candidates)}, needed {nodes}")
    log.info(
        "filtering available nodes with allocatable resources on at least one NUMA zone that can match request"
    )
    candidates = e2enrt.filter_any_zone_matching_resources(
        candidates, e2enrt.filter_only_numa_affine_resources(required, "nodeState")
    )
    if len(candidates) < nodes:
        fxt.skip(
            f"not enough nodes with NUMA zones each of them can match requests: found {len(candidates)}, "
            f"needed: {nodes}"
        )
    return candidates


# ----------------------------------------------------------------------------- pods and objects


def pause_container(name: str, image: str) -> dict[str, Any]:
    return {"name": name, "image": image, "command": ["/pause"], "resources": {}}


def new_test_pod(namespace: str, name: str, image: str, containers: int = 1) -> Manifest:
    """``NewTestPodPauseMultiContainer``: pause containers ``<name>-cnt-<i>``, no grace period."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [pause_container(f"{name}-cnt-{idx}", image) for idx in range(containers)],
        },
    }


def set_resources(container: dict[str, Any], res: Mapping[str, Quantity], *, limits: bool) -> None:
    container.setdefault("resources", {})["limits" if limits else "requests"] = rl.to_manifest(res)


def pod_key(pod: Mapping[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def phase(pod: Mapping[str, Any] | None) -> str:
    return str(((pod or {}).get("status") or {}).get("phase") or "")


def create_all(kube: Kube, manifests: Iterable[Manifest]) -> list[Manifest]:
    """Create each object; return what the server stored (names filled in for generateName)."""
    return [kube.create(manifest) for manifest in manifests]


def describe_pods(pods: Iterable[Mapping[str, Any]]) -> str:
    """``describePods``: each pod's key, uid and ``describePodStatus`` (QoS class, phase and reason
    from its status, then its container statuses as JSON)."""
    return ", ".join(
        f"pod {pod_key(p)} (uid={p['metadata'].get('uid')}) status={_describe_status(p)}" for p in pods
    )


def _describe_status(pod: Mapping[str, Any]) -> str:
    status = pod.get("status") or {}
    containers = json.dumps(status.get("containerStatuses"), separators=(",", ":"))
    return (
        f"<qos={status.get('qosClass', '')} phase={status.get('phase', '')} reason={status.get('reason', '')} "
        f"containerStatuses={containers}>"
    )


def pod_names(pods: Iterable[Mapping[str, Any]]) -> str:
    return ",".join(pod_key(p) for p in pods)


# ----------------------------------------------------------------------------- scheduling events


def check_pod_was_scheduled_with(kube: Kube, namespace: str, name: str, scheduler: str) -> bool:
    """``nrosched.CheckPODWasScheduledWith`` (:mod:`nrop.suite.e2e.scheduling`): no events at all fails at once."""
    return bool(scheduling.check_pod_was_scheduled_with(kube, namespace, name, scheduler))


def check_pod_scheduling_failed(kube: Kube, namespace: str, name: str, scheduler: str) -> bool:
    return bool(scheduling.check_pod_scheduling_failed(kube, namespace, name, scheduler))


def check_pod_scheduling_failed_with_msg(
    kube: Kube, namespace: str, name: str, scheduler: str, msg: str
) -> bool:
    return bool(scheduling.check_pod_scheduling_failed_with_msg(kube, namespace, name, scheduler, msg))


def check_pod_scheduling_failed_for_alignment(
    kube: Kube, namespace: str, name: str, scheduler: str, scope: str
) -> bool:
    return bool(scheduling.check_pod_scheduling_failed_for_alignment(kube, namespace, name, scheduler, scope))


def check_pod_kubelet_reject_topology_affinity(kube: Kube, namespace: str, name: str) -> bool:
    return bool(scheduling.check_pod_kubelet_reject_with_topology_affinity_error(kube, namespace, name))


def expect_scheduled_with(kube: Kube, pods: Iterable[Mapping[str, Any]], scheduler: str) -> None:
    for pod in pods:
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        assert check_pod_was_scheduled_with(kube, namespace, name, scheduler), (
            f"pod {namespace}/{name} not scheduled with expected scheduler {scheduler}"
        )


# ----------------------------------------------------------------------------- node load


def expect_ok(call: Callable[[], T], failure: str) -> T:
    """``Expect(err).ToNot(HaveOccurred(), failure)`` around an API call: an API error fails
    with upstream's message, the error after it."""
    try:
        return call()
    except k8s.ApiError as err:
        raise AssertionError(f"{failure}: {err}") from None


def baseload_for_node(kube: Kube, node_name: str, failure: str | None = None) -> ResList:
    """``baseload.ForNode`` as a resource list (logged as upstream does). ``failure`` is the
    message upstream asserts the lookup's error with (the API error follows it); without it the
    API error is raised as it is."""
    lookup = partial(baseload.for_node, kube, node_name)
    load = lookup() if failure is None else expect_ok(lookup, failure)
    log.info("%s", load)
    return dict(load.resources)


def pad_nodes_to_baseload(
    kube: Kube,
    namespace: str,
    image: str,
    nrts: Sequence[Manifest],
    node_names: Iterable[str],
    *,
    get_nodes: bool = False,
) -> list[Manifest]:
    """Saturate each node of ``node_names``: zone 0 keeps nothing, every other zone only the
    node's base load (``SaturateNodeUntilLeft`` then a pinned ``newPaddingPod`` per zone), each
    step asserted with upstream's message. ``get_nodes``: first read each Node and fail if it
    cannot be read (resource_accounting's BeforeEach does; the other callers do not).
    Returns the padding pods created."""
    pods = []
    for node_name in node_names:
        if get_nodes:
            kube.get(k8s.NODE, node_name)  # Expect(err).NotTo(HaveOccurred())
        load = baseload_for_node(kube, node_name, f"missing node load info for {q(node_name)}")
        nrt = e2enrt.find(nrts, node_name)
        assert nrt is not None, f"missing NRT info for {q(node_name)}"
        try:
            padding = e2epad.saturate_node_until_left(nrt, load)
        except ValueError as err:  # a zone without the resource, or NotEnoughResourcesError
            raise AssertionError(
                f"could not get padding resources for node {q(e2enrt.nrt_name(nrt))}: {err}"
            ) from None
        for zone in zones(nrt):
            pod = e2epad.new_padding_pod(
                namespace, node_name, zone["name"], padding[zone["name"]], image=image
            )
            objects.pin_pod_to(pod, node_name, zone["name"])
            pods.append(kube.create(pod))
    return pods


# ----------------------------------------------------------------------------- expectations


def expect_nrt_consumed(
    kube: Kube,
    before: Manifest,
    required: Mapping[str, Quantity],
    pod: Mapping[str, Any],
    timeout: float = 60.0,
) -> Manifest:
    """``expectNRTConsumedResources``: the node's NRT changes and some zone shows the consumption."""
    after = nrtupdates.get_updated_for_node(kube, before, timeout)
    match = nrtconsumed.check_zone_consumed_resources_at_least(before, after, required, objects.pod_qos(pod))
    assert match, (
        "inconsistent accounting: no resources consumed by the running pod,\n"
        f"NRT before test's pod: {nrtcompare.to_string_nrt(before)} \n"
        f"NRT after: {nrtcompare.to_string_nrt(after)} \n"
        f"pod resources: {rl.to_string(required)}"
    )
    return after


# ----------------------------------------------------------------------------- operator objects


@dataclass(frozen=True)
class PoolConfig:
    """The single node-group pool the cache/stall specs run on, from the NROP status."""

    name: str
    config: Mapping[str, Any]


def single_pool_config(nrop: Mapping[str, Any]) -> tuple[int, PoolConfig | None]:
    """(pool count, the pool) from ``status.machineconfigpools``, as upstream reads
    ``Status.MachineConfigPools``: the pool only when there is exactly one."""
    mcps = (nrop.get("status") or {}).get("machineconfigpools") or []
    pools = [PoolConfig(str(m.get("name", "")), m.get("config") or {}) for m in mcps]
    return len(pools), (pools[0] if len(pools) == 1 else None)


def pfp_enabled(config: Mapping[str, Any]) -> tuple[bool, str]:
    value = str(config.get("podsFingerprinting") or "")
    return value in ("Enabled", "EnabledExclusiveResources"), value


def refresh_mode_is(config: Mapping[str, Any], mode: str) -> tuple[bool, str]:
    value = str(config.get("infoRefreshMode") or "")
    return value == mode, value


def check_periodic_node_group(fxt: Any, kube: Any, nrop_name: str, pfp_skip: str) -> float:
    """The BeforeEach of "using a NodeGroup with periodic unevented updates": skip unless the
    single MachineConfigPool has pod fingerprinting and Periodic refresh; returns the refresh
    period. ``pfp_skip`` starts the family's skip reason for the fingerprint mode (upstream's
    two files word it differently)."""
    nrop = expect_ok(lambda: kube.get(k8s.NROP, nrop_name), f'cannot get "/{nrop_name}" in the cluster')
    count, pool = single_pool_config(nrop)
    if pool is None:
        fxt.skip(f"more than one MCP not yet supported, found {count}")
    ok, value = pfp_enabled(pool.config)
    if not ok:
        fxt.skip(f"{pfp_skip} {q(value)} in {q(pool.name)}")
    ok, value = refresh_mode_is(pool.config, "Periodic")
    if not ok:
        fxt.skip(f"unsupported refresh mode {q(value)} in {q(pool.name)}")
    period = parse_duration(str(pool.config.get("infoRefreshPeriod") or "0"))
    log.info("using MCP %s refreshPeriod %ss", pool.name, period)
    return period


def dump_failed_pod_info(kube: Any, failed: list[dict]) -> None:
    """``dumpFailedPodInfo``: on failure, the NRT list and each failed pod's events."""
    if not failed:
        return
    nrts = nrtupdates.get_updated(kube, [], 60)  # as upstream: one poll interval, then the list
    log.info("NRT list: %s", nrtcompare.list_to_string(nrts, "post failure"))
    for pod in failed:
        waiters.log_events_for_pod(kube, pod["metadata"]["namespace"], pod["metadata"]["name"])


def reference_zone_cpus(nrts: Sequence[Manifest]) -> int:
    """The available CPUs of zone 0 of the first candidate, all zones being assumed equal
    (``FindResourceAvailableByName`` then ``AsInt64``, both asserted as upstream)."""
    node = nrts[0]
    zone = zones(node)[0]
    where = f"zone {q(zone['name'])} node {q(e2enrt.nrt_name(node))}"
    cpus = zone_resources(zone).get("cpu")
    assert cpus is not None, f"no CPU resource in {where}"
    value = cpus.as_int64()
    assert value is not None, f"invalid CPU resource in {where}: {cpus}"
    return value


def round_seconds(seconds: float) -> float:
    """``Duration.Round(time.Second)``: half away from zero."""
    return float(int(seconds + 0.5))


def q(text: object) -> str:
    """Go's ``%q`` of a value's text, for messages that quote names the way upstream prints them."""
    return go_quote(str(text))


# ----------------------------------------------------------------------------- workloads


def pause_pod_spec(
    container_name: str,
    image: str,
    *,
    scheduler: str | None = None,
    limits: Mapping[str, Quantity] | None = None,
    requests: Mapping[str, Quantity] | None = None,
) -> dict[str, Any]:
    container = pause_container(container_name, image)
    if limits is not None:
        container["resources"]["limits"] = rl.to_manifest(limits)
    if requests is not None:
        container["resources"]["requests"] = rl.to_manifest(requests)
    spec_: dict[str, Any] = {
        "terminationGracePeriodSeconds": 0,
        "containers": [container],
        "restartPolicy": "Always",
    }
    if scheduler:
        spec_["schedulerName"] = scheduler
    return spec_
