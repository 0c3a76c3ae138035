"""Private glue of the accounting, host-level, cache, stall, fundamentals, preemption and
scheduler-removal families (serial/test_{resource_accounting,resource_hostlevel,scheduler_cache,
scheduler_cache_stall,non_regression,non_regression_fundamentals,workload_unschedulable,
priority_based_placement,scheduler_removal}.py).

The rules themselves live once in the suite library: resource arithmetic in
``nrop.suite.resourcelist``, NRT filters and comparisons in ``nrop.suite.nrt``, padding pods
in ``nrop.suite.padding``, test objects and QoS in ``nrop.suite.objects``, event predicates in
``nrop.suite.scheduling``, the base load in ``nrop.suite.baseload``. What stays here is how
these specs use them over plain dict manifests and the suite's ``Kube`` client: waits with
upstream's messages and polling, operator-object reads.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nrop.api.quantity import Quantity, coerce
from nrop.suite import baseload, objects, scheduling, waiters
from nrop.suite import kube as k8s
from nrop.suite import nrt as e2enrt
from nrop.suite import padding as e2epad
from nrop.suite import resourcelist as rl
from nrop.suite.kube import Kube, Manifest
from nrop.suite.waiting import WaitTimeout, wait_for

log = logging.getLogger(__name__)

ResList = rl.ResourceList

GIB = 1024**3
FIRST_EVENT_GRACE = 30.0  # seconds a pod may wait for its first event

# ----------------------------------------------------------------------------- NRT data


def zone_resources(zone: Mapping[str, Any], which: str = "available") -> ResList:
    return {str(r["name"]): coerce(r[which]) for r in zone.get("resources") or ()}


def zones(nrt: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(nrt.get("zones") or ())


def nrt_name(nrt: Mapping[str, Any]) -> str:
    return str(nrt["metadata"]["name"])


def nrt_attribute(nrt: Mapping[str, Any], name: str) -> str | None:
    for attr in nrt.get("attributes") or ():
        if attr.get("name") == name:
            return str(attr.get("value"))
    return None


def find_from_list(nrts: Iterable[Manifest], name: str) -> Manifest:
    for nrt in nrts:
        if nrt_name(nrt) == name:
            return nrt
    raise AssertionError(f"failed to find NRT for {name!r}")


def pop_node_name(names: set[str]) -> str:
    """``PopNodeName``: ``E2E_NROP_TARGET_NODE`` when it is a candidate, else any name."""
    preferred = os.environ.get("E2E_NROP_TARGET_NODE")
    if preferred and preferred in names:
        names.discard(preferred)
        return preferred
    if not names:
        raise AssertionError("cannot select a target node among no candidates")
    name = random.choice(sorted(names))
    names.discard(name)
    return name


def nrt_to_string(nrt: Mapping[str, Any]) -> str:
    parts = [f"NRT {nrt_name(nrt)} rv={nrt['metadata'].get('resourceVersion')}"]
    parts.extend(f"  {zone['name']}: {rl.to_string(zone_resources(zone))}" for zone in zones(nrt))
    return "\n".join(parts)


def _same_nrt(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    if before["metadata"].get("resourceVersion") == after["metadata"].get("resourceVersion"):
        return True
    return _canonical_zones(before) == _canonical_zones(after) and (before.get("attributes") or []) == (
        after.get("attributes") or []
    )


def _canonical_zones(nrt: Mapping[str, Any]) -> list[tuple[str, dict[str, tuple[Quantity, ...]]]]:
    return [
        (
            str(zone["name"]),
            {
                str(r["name"]): (coerce(r["capacity"]), coerce(r["allocatable"]), coerce(r["available"]))
                for r in zone.get("resources") or ()
            },
        )
        for zone in zones(nrt)
    ]


_DEFAULT_REFRESH_PERIOD = 10.0
_REPUBLISH_MARGIN = 5.0


def republish_grace(kube: Kube) -> float:
    """How long after which an NRT that did not change counts as re-published unchanged: one
    exporter refresh period (from the NROP status, default 10s) plus a margin.

    Upstream's ``GetUpdated`` waits for a change of zones or attributes; its exporter emits
    resources in Go map order, so every periodic refresh looks like a change and the wait
    means "re-published since the reference". An exporter with a stable order only changes
    an NRT when the data change; the same meaning is then one refresh period.
    """
    period = _DEFAULT_REFRESH_PERIOD
    for nrop in kube.list(k8s.NROP):
        _, pool = single_pool_config(nrop)
        if pool is not None and pool.config.get("infoRefreshPeriod"):
            period = parse_duration(str(pool.config["infoRefreshPeriod"]))
    return period + _REPUBLISH_MARGIN


def _changed_or_republished(
    kube: Kube,
    refs: Sequence[Manifest],
    getter: Callable[[], list[Manifest]],
    timeout: float,
    interval: float,
) -> list[Manifest]:
    grace = min(timeout, republish_grace(kube))
    start = time.monotonic()
    while True:
        items = getter()
        unchanged = [nrt_name(ref) for ref in refs if _same_nrt(ref, find_from_list(items, nrt_name(ref)))]
        if not unchanged:
            return items
        if time.monotonic() - start >= grace:
            log.info("NRTs %s re-published unchanged within %.0fs", unchanged, grace)
            return items
        time.sleep(interval)


def get_updated_for_node(kube: Kube, ref: Manifest, timeout: float, interval: float = 1.0) -> Manifest:
    """``GetUpdatedForNode``: the node's NRT once it changed from ``ref``, or as re-published
    after one refresh period (see ``republish_grace``)."""
    items = _changed_or_republished(
        kube, [ref], lambda: [kube.get(k8s.NRT, nrt_name(ref))], timeout, interval
    )
    return items[0]


def get_updated(
    kube: Kube, refs: Sequence[Manifest], timeout: float, interval: float = 1.0
) -> list[Manifest]:
    """``GetUpdated``: the NRT list once every NRT of ``refs`` changed or was re-published
    (immediate when ``refs`` is empty)."""
    return _changed_or_republished(kube, refs, lambda: kube.list(k8s.NRT), timeout, interval)


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
    return ", ".join(
        f"pod {pod_key(p)} (uid={p['metadata'].get('uid')}) status=<qos={objects.pod_qos(p)} phase={phase(p)} "
        f"reason={(p.get('status') or {}).get('reason', '')}>"
        for p in pods
    )


def pod_names(pods: Iterable[Mapping[str, Any]]) -> str:
    return ",".join(pod_key(p) for p in pods)


# ----------------------------------------------------------------------------- waiting


def for_pod_phase(
    kube: Kube, namespace: str, name: str, want: str, timeout: float, interval: float = 1.0
) -> tuple[Manifest | None, bool]:
    """``ForPodPhase``: (last seen pod, reached)."""
    seen: list[Manifest | None] = [None]

    def get() -> Manifest | None:
        seen[0] = kube.get_or_none(k8s.POD, name, namespace)
        return seen[0]

    try:
        return wait_for(
            get,
            lambda pod: phase(pod) == want,
            f"pod {namespace}/{name} to be {want}",
            timeout,
            interval=interval,
        ), True
    except WaitTimeout:
        log.info("pod %s/%s did not reach %s in %ss", namespace, name, want, timeout)
        return seen[0], False


def for_pods_all_running(
    kube: Kube, pods: Sequence[Mapping[str, Any]], timeout: float, interval: float = 1.0
) -> tuple[list[Manifest], list[Manifest]]:
    """``ForPodsAllRunning``: (failed, running); each pod counts as running once seen Running
    within ``timeout`` (as upstream's one waiter per pod), with the object seen then.

    One list per namespace per poll instead of one GET per pod and poll: the same observation,
    cheaper for bursts of tens of pods.
    """
    wanted = [pod_key(p) for p in pods]
    namespaces = {p["metadata"]["namespace"] for p in pods}
    latest: dict[str, Manifest] = {pod_key(p): dict(p) for p in pods}
    reached: dict[str, Manifest] = {}
    deadline = time.monotonic() + timeout
    while True:
        for namespace in namespaces:
            for item in kube.list(k8s.POD, namespace):
                key = pod_key(item)
                if key in latest:
                    latest[key] = item
                    if phase(item) == "Running" and key not in reached:
                        reached[key] = item
        if len(reached) == len(wanted) or time.monotonic() >= deadline:
            break
        time.sleep(interval)
    failed = [latest[key] for key in wanted if key not in reached]
    return failed, [reached[key] for key in wanted if key in reached]


def while_in_pod_phase(
    kube: Kube, namespace: str, name: str, want: str, interval: float, steps: int
) -> Manifest:
    """``WhileInPodPhase``: sleep then GET, ``steps`` times; AssertionError if the phase ever differs."""
    pod: Manifest = {}
    for step in range(steps):
        time.sleep(interval)
        log.info(
            "ensuring the pod %s/%s keep being in phase %s %d/%d", namespace, name, want, step + 1, steps
        )
        pod = kube.get(k8s.POD, name, namespace)
        if phase(pod) != want:
            log_events_for_pod(kube, namespace, name)
            raise AssertionError(
                f"Pod {namespace}/{name} was found in state {phase(pod)!r} while expected to be {want}"
            )
    return pod


def for_pod_deleted(kube: Kube, namespace: str, name: str, timeout: float, interval: float = 1.0) -> None:
    wait_for(
        lambda: kube.get_or_none(k8s.POD, name, namespace),
        lambda pod: pod is None,
        f"pod {namespace}/{name} to be deleted",
        timeout,
        interval=interval,
    )


def log_events_for_pod(kube: Kube, namespace: str, name: str) -> None:
    log.info("begin events for %s/%s", namespace, name)
    for ev in kube.events_for(namespace, name):
        log.info(
            "+- event: %s %s: %s %s",
            ev.get("type"),
            ev.get("reportingComponent") or ev.get("reportingController"),
            ev.get("reason"),
            ev.get("message"),
        )
    log.info("end events for %s/%s", namespace, name)


def wait_padding_pods_running(
    kube: Kube, pods: Sequence[Manifest], timeout: float = 180.0, interval: float = 1.0
) -> list[str]:
    """``WaitForPaddingPodsRunning``: the ids of the padding pods that failed to run."""
    failed, _ = for_pods_all_running(kube, pods, timeout, interval)
    for pod in failed:
        log_events_for_pod(kube, pod["metadata"]["namespace"], pod["metadata"]["name"])
    return [pod_key(p) for p in failed]


def deployment_complete(dp: Mapping[str, Any] | None) -> bool:
    if not dp:
        return False
    return waiters.is_deployment_complete(
        int(dp["metadata"].get("generation", 0)),
        dp.get("status") or {},
        int((dp.get("spec") or {}).get("replicas", 1)),
    )


def for_deployment_complete(
    kube: Kube, namespace: str, name: str, timeout: float, interval: float = 1.0
) -> Manifest:
    return wait_for(
        lambda: kube.get_or_none(k8s.DEPLOYMENT, name, namespace),
        deployment_complete,
        f"deployment {namespace}/{name} to be complete",
        timeout,
        interval=interval,
    )


def for_job_completed(
    kube: Kube, namespace: str, name: str, timeout: float, interval: float = 1.0
) -> Manifest:
    def failed(job: Mapping[str, Any] | None) -> bool:
        conditions = ((job or {}).get("status") or {}).get("conditions") or ()
        return any(c.get("type") == "Failed" and c.get("status") == "True" for c in conditions)

    return wait_for(
        lambda: kube.get_or_none(k8s.JOB, name, namespace),
        lambda job: job is not None and waiters.is_job_completed(job),
        f"job {namespace}/{name} to complete",
        timeout,
        interval=interval,
        terminal=failed,
    )


def pods_matching(kube: Kube, namespace: str, selector: Mapping[str, str]) -> list[Manifest]:
    return kube.list(k8s.POD, namespace, label_selector=dict(selector))


def for_nrts_equal_to(
    kube: Kube,
    refs: Sequence[Manifest],
    timeout: float,
    interval: float = 5.0,
    ignore: Callable[[Manifest], bool] | None = None,
) -> list[Manifest]:
    """``ForNodeResourceTopologiesEqualTo``: every (not ignored) NRT's available resources
    equal the reference."""
    wanted = [ref for ref in refs if ignore is None or not ignore(ref)]

    def equal(items: list[Manifest]) -> bool:
        return all(
            e2enrt.check_equal_available_resources(ref, find_from_list(items, nrt_name(ref)))
            for ref in wanted
        )

    return wait_for(
        lambda: kube.list(k8s.NRT), equal, "NRT data to be equal to the reference", timeout, interval=interval
    )


# ----------------------------------------------------------------------------- scheduling events


def _check_pod_events(
    kube: Kube, namespace: str, name: str, check: Callable[[Mapping[str, Any]], bool]
) -> bool:
    # an event is recorded asynchronously: give the first one a moment to be there
    events = kube.events_for(namespace, name)
    deadline = time.monotonic() + FIRST_EVENT_GRACE
    while not events and time.monotonic() < deadline:
        time.sleep(1)
        events = kube.events_for(namespace, name)
    if not events:
        raise AssertionError(f"no event received for {namespace}/{name}")
    for event in events:
        if check(event):
            log.info(
                "found relevant event for pod %s/%s: %s %s",
                namespace,
                name,
                event.get("reason"),
                event.get("message"),
            )
            return True
    log.warning("Failed to find relevant scheduling event for pod %s/%s", namespace, name)
    return False


def check_pod_was_scheduled_with(kube: Kube, namespace: str, name: str, scheduler: str) -> bool:
    return _check_pod_events(kube, namespace, name, lambda ev: scheduling.is_scheduled_with(ev, scheduler))


def check_pod_scheduling_failed(kube: Kube, namespace: str, name: str, scheduler: str) -> bool:
    return _check_pod_events(kube, namespace, name, lambda ev: scheduling.is_failed_scheduling(ev, scheduler))


def check_pod_scheduling_failed_with_msg(
    kube: Kube, namespace: str, name: str, scheduler: str, msg: str
) -> bool:
    return _check_pod_events(
        kube, namespace, name, lambda ev: scheduling.is_failed_scheduling(ev, scheduler, msg)
    )


def check_pod_scheduling_failed_for_alignment(
    kube: Kube, namespace: str, name: str, scheduler: str, scope: str
) -> bool:
    return check_pod_scheduling_failed_with_msg(
        kube, namespace, name, scheduler, scheduling.alignment_error(scope)
    )


def check_pod_kubelet_reject_topology_affinity(kube: Kube, namespace: str, name: str) -> bool:
    return _check_pod_events(kube, namespace, name, scheduling.is_kubelet_topology_affinity_error)


def expect_scheduled_with(kube: Kube, pods: Iterable[Mapping[str, Any]], scheduler: str) -> None:
    for pod in pods:
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        assert check_pod_was_scheduled_with(kube, namespace, name, scheduler), (
            f"pod {namespace}/{name} not scheduled with expected scheduler {scheduler}"
        )


# ----------------------------------------------------------------------------- node load


def baseload_for_node(kube: Kube, node_name: str) -> ResList:
    """``baseload.ForNode`` as a resource list (logged as upstream does)."""
    load = baseload.for_node(kube, node_name)
    log.info("%s", load)
    return dict(load.resources)


def pad_nodes_to_baseload(
    kube: Kube, namespace: str, image: str, nrts: Sequence[Manifest], node_names: Iterable[str]
) -> list[Manifest]:
    """Saturate each node of ``node_names``: zone 0 keeps nothing, every other zone only the
    node's base load (``SaturateNodeUntilLeft`` then a pinned ``newPaddingPod`` per zone).
    Returns the padding pods created."""
    pods = []
    for node_name in node_names:
        load = baseload_for_node(kube, node_name)
        nrt = find_from_list(nrts, node_name)
        padding = e2epad.saturate_node_until_left(nrt, load)
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
    after = get_updated_for_node(kube, before, timeout)
    match = e2enrt.check_zone_consumed_resources_at_least(before, after, required, objects.pod_qos(pod))
    assert match, (
        "inconsistent accounting: no resources consumed by the running pod,\n"
        f"NRT before test's pod: {nrt_to_string(before)} \nNRT after: {nrt_to_string(after)} \n"
        f"pod resources: {rl.to_string(required)}"
    )
    return after


# ----------------------------------------------------------------------------- operator objects


_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """A Go ``time.Duration`` string (``5s``, ``1m30s``, ``1.5h``) in seconds."""
    text = text.strip()
    if text in ("0", ""):
        return 0.0
    pos, total = 0, 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text):
        raise ValueError(f"invalid duration {text!r}")
    return total


@dataclass(frozen=True)
class PoolConfig:
    """The single node-group pool the cache/stall specs run on, from the NROP status."""

    name: str
    config: Mapping[str, Any]


def single_pool_config(nrop: Mapping[str, Any]) -> tuple[int, PoolConfig | None]:
    """(pool count, the pool) from ``status.machineConfigPools`` (OpenShift), or on Kubernetes
    from ``status.nodeGroups`` (which carries the same per-pool NodeGroupConfig)."""
    status = nrop.get("status") or {}
    mcps = status.get("machineConfigPools") or []
    if mcps:
        pools = [PoolConfig(str(m.get("name", "")), m.get("config") or {}) for m in mcps]
    else:
        pools = [
            PoolConfig(str(g.get("selector") or g.get("poolName") or ""), g.get("config") or {})
            for g in status.get("nodeGroups") or []
        ]
    return len(pools), (pools[0] if len(pools) == 1 else None)


def pfp_enabled(config: Mapping[str, Any]) -> tuple[bool, str]:
    value = str(config.get("podsFingerprinting") or "")
    return value in ("Enabled", "EnabledExclusiveResources"), value


def refresh_mode_is(config: Mapping[str, Any], mode: str) -> tuple[bool, str]:
    value = str(config.get("infoRefreshMode") or "")
    return value == mode, value


def check_periodic_node_group(fxt: Any, kube: Any, nrop_name: str) -> float:
    """The BeforeEach of "using a NodeGroup with periodic unevented updates": skip unless the
    single node group has pod fingerprinting and Periodic refresh; returns the refresh period."""
    nrop = kube.get(k8s.NROP, nrop_name)
    count, pool = single_pool_config(nrop)
    if pool is None:
        fxt.skip(f"more than one MCP not yet supported, found {count}")
    ok, value = pfp_enabled(pool.config)
    if not ok:
        fxt.skip(f"unsupported fingerprint status {q(value)} in {q(pool.name)}")
    ok, value = refresh_mode_is(pool.config, "Periodic")
    if not ok:
        fxt.skip(f"unsupported refresh mode {q(value)} in {q(pool.name)}")
    period = parse_duration(str(pool.config.get("infoRefreshPeriod") or "0"))
    log.info("using MCP %s refreshPeriod %ss", pool.name, period)
    return period


def dump_failed_pod_info(kube: Any, failed: list[dict]) -> None:
    if not failed:
        return
    for nrt in kube.list(k8s.NRT):
        log.info("NRT post failure: %s", nrt_to_string(nrt))
    for pod in failed:
        log_events_for_pod(kube, pod["metadata"]["namespace"], pod["metadata"]["name"])


def round_seconds(seconds: float) -> float:
    """``Duration.Round(time.Second)``: half away from zero."""
    return float(int(seconds + 0.5))


def q(text: object) -> str:
    """Go's ``%q`` for messages that quote names the way upstream prints them."""
    return json.dumps(str(text))


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


def for_deployment_replicas(
    kube: Kube, namespace: str, name: str, field: str, replicas: int, timeout: float, interval: float = 1.0
) -> Manifest:
    """``ForDeploymentReplicasCreation`` (field ``replicas``) / ``...Readiness`` (``readyReplicas``)."""
    return wait_for(
        lambda: kube.get(k8s.DEPLOYMENT, name, namespace),
        lambda dp: int((dp.get("status") or {}).get(field, 0)) == replicas,
        f"deployment {namespace}/{name} to have {replicas} {field}",
        timeout,
        interval=interval,
    )


def pods_of(kube: Kube, obj: Mapping[str, Any]) -> list[Manifest]:
    """Pods selected by a Deployment/DaemonSet/ReplicaSet's label selector (not terminating)."""
    selector = obj["spec"]["selector"]["matchLabels"]
    pods = kube.list(k8s.POD, obj["metadata"]["namespace"], label_selector=dict(selector))
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def worker_nodes(kube: Kube) -> list[Manifest]:
    return kube.list(k8s.NODE, label_selector="node-role.kubernetes.io/worker=")


def pick_node_index(nodes: Sequence[Mapping[str, Any]]) -> int:
    """``PickNodeIndex``: the index of E2E_NROP_TARGET_NODE among ``nodes``, else 0."""
    preferred = os.environ.get("E2E_NROP_TARGET_NODE")
    for idx, node in enumerate(nodes):
        if node["metadata"]["name"] == preferred:
            return idx
    return 0


def condition_true(obj: Mapping[str, Any] | None, cond_type: str) -> bool:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or ():
        if cond.get("type") == cond_type:
            return cond.get("status") == "True"
    return False


def check_nrosched_available(
    kube: Kube, name: str, timeout: float = 300.0, interval: float = 10.0
) -> Manifest:
    """``CheckNROSchedulerAvailable``: Available=True and ``status.deployment`` set."""
    nrs = wait_for(
        lambda: kube.get_or_none(k8s.NROSCHED, name),
        lambda obj: condition_true(obj, "Available"),
        f"NUMAResourcesScheduler {name} to be Available",
        timeout,
        interval=interval,
    )
    deployment = (nrs.get("status") or {}).get("deployment") or {}
    assert deployment.get("namespace") and deployment.get("name"), (
        f"scheduler deployment missing: {deployment}"
    )
    return nrs


SCHEDULER_LEASE = "numa-scheduler-leader"


def dump_scheduler_logs(kube: Kube, sched_namespace: str, *pods: Mapping[str, Any]) -> None:
    """``dumpSchedulerLogs``: the leader's logs since the earliest test pod creation - 5s (else
    the last 30s), to show why a pod was (not) scheduled."""
    lease = kube.get_or_none(k8s.LEASE, SCHEDULER_LEASE, sched_namespace)
    holder = str(((lease or {}).get("spec") or {}).get("holderIdentity") or "")
    leader = next(
        (
            p
            for p in kube.list(k8s.POD, sched_namespace, label_selector="app=secondary-scheduler")
            if p["metadata"]["name"] and holder.startswith(p["metadata"]["name"])
        ),
        None,
    )
    if leader is None:
        log.error("cannot find scheduler leader pod (lease holder %r)", holder)
        return
    since = 30
    if pods:
        created = min(str(p["metadata"].get("creationTimestamp") or "") for p in pods)
        if created:
            started = datetime.fromisoformat(created.replace("Z", "+00:00"))
            since = max(1, int((datetime.now(UTC) - started).total_seconds()) + 5)
    try:
        logs = kube.pod_logs(sched_namespace, leader["metadata"]["name"], since_seconds=since)
    except Exception:
        log.exception("cannot fetch scheduler logs")
        return
    log.info("begin scheduler logs for %s\n%send scheduler logs", pod_key(leader), logs)
