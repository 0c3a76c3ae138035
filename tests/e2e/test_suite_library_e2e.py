"""The suite's library against a real embedded cluster: fixture, padding, waiters, event checks.

One embedded cluster on the ``default`` profile (two workers, two NUMA zones each,
``single-numa-node`` with scope ``pod``) runs as the suite's embedded target, with the NRT
CRD, the numacell device plugin as a DaemonSet on the workers (the suite's own manifests,
as BeforeSuite deploys it) and one
``resource-topology-exporter`` per worker (periodic, 1s, pod fingerprint on), so every
NRT the library reads is an exporter's and every zone exposes ``kni.node/numacellNN``.
Pods are scheduled by the cluster's ``default-scheduler``. What is checked, through the
library's public API only:

* ``Fixture.setup``/``teardown``: the labelled namespace ``<base>-<n>``, the NRTs settle
  (``settle_nrts``), a guaranteed pod consumes from one zone (the NRT once its zones differ +
  ``check_zone_consumed_resources_at_least``), teardown removes the namespace and the
  cooldown sees the NRTs back at the initial state;
* the cooldown fails with upstream's message and an NRT diff when something outside the
  namespace keeps resources, and a skipped test does not cool down;
* ``Padder`` pads exactly one node to the target per zone (each pad pod pinned to its zone
  by numacell), the NRTs converge, a pod that does not fit the padded node's zones lands on
  the other node; ``clean`` removes the pods; ``pin_pod_to`` puts a pod in the zone asked;
* the event checks against real events: ``Scheduled``/``FailedScheduling`` by
  ``default-scheduler``, the kubelet's ``TopologyAffinityError``; ``while_in_pod_phase``;
* the workload waiters (Deployment, ReplicaSet, DaemonSet, Job) and ``baseload.for_node``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _helpers_e2e import deploy_numacell, install_nrt_crd, start_exporter, stopped_cleanly

from nrop.api.images import DEFAULT_IMAGE
from nrop.api.nrt import NodeResourceTopology
from nrop.suite.e2e import baseload, objects, scheduling
from nrop.suite.e2e import kube as k
from nrop.suite.e2e.config import SuiteConfig
from nrop.suite.e2e.fixture import COOLDOWN_FAILED, Fixture
from nrop.suite.e2e.nrt import compare as nrtcompare
from nrop.suite.e2e.nrt import consumed as nrtconsumed
from nrop.suite.e2e.nrt import topologies as nrtutil
from nrop.suite.e2e.nrt import updates as nrtupdates
from nrop.suite.e2e.nrt import waiters as nrtwaiters
from nrop.suite.e2e.padding import PADDER_LABEL, Padder
from nrop.suite.e2e.resourcelist import of
from nrop.suite.e2e.timeouts import Timeouts
from nrop.suite.e2e.wait import waiters
from nrop.suite.e2e.wait.polling import wait_for
from nrop.suite.install import numacelldeploy
from nrop.suite.plugin.target import EmbeddedCluster

pytestmark = [pytest.mark.slow, pytest.mark.cluster_profile("default")]

WORKERS = ("worker-0", "worker-1")
SCHEDULER = "default-scheduler"
BASE_NAME = "e2e-test-library"
NUMACELL_NAMESPACE = "e2e-test-library-infra"


@pytest.fixture(scope="module")
def nrts(embedded: EmbeddedCluster, kube: k.Kube, state_dir: Path) -> Iterator[dict[str, dict[str, Any]]]:
    """The NRT CRD, numacell on the workers and one exporter per worker running; the workers' NRTs once
    every zone exposes the numacell resources."""
    install_nrt_crd(kube)
    deploy_numacell(kube, NUMACELL_NAMESPACE, 60.0)
    periodic = ("--sleep-interval", "1s", "--podreadiness=false", "--refresh-node-resources")
    exporters = {node: start_exporter(embedded, kube, node, state_dir, *periodic) for node in WORKERS}
    with stopped_cleanly(exporters):
        yield nrtwaiters.for_nrts(
            kube,
            WORKERS,
            numacelldeploy.zones_expose_numacell,
            "with numacell resources in every zone",
            60.0,
            interval=0.5,
        )


@pytest.fixture(scope="module")
def suite_config(kube: k.Kube, nrts: dict[str, dict[str, Any]]) -> SuiteConfig:
    """The config BeforeSuite would record: the settled NRTs as the reference."""
    timeouts = dataclasses.replace(Timeouts.from_env({}, local=True), settle_timeout=30.0, teardown=60.0)
    config = SuiteConfig(
        kube=kube,
        scheduler_name=SCHEDULER,
        nrop={},
        nrosched={},
        nrt_reference=[],
        timeouts=timeouts,
        target="embedded",
        profile="default",
    )
    fxt = Fixture(kube, "", [], config)
    return config.with_nrt_reference(fxt.settle_nrts())


@pytest.fixture
def fxt(suite_config: SuiteConfig) -> Iterator[Fixture]:
    fixture = Fixture.setup(suite_config, BASE_NAME)
    yield fixture
    fixture.teardown()


def guaranteed_pod(namespace: str, name: str, cpu: int | str, memory: str = "1Gi") -> dict[str, Any]:
    pod = objects.new_test_pod_pause(namespace, name)
    return objects.set_resources(pod, limits={"cpu": cpu, "memory": memory})


def _nrt(kube: k.Kube, node: str) -> NodeResourceTopology:
    return nrtutil.parse(nrtutil.get_nrt(kube, node))


def nrt_accounting_change(kube: k.Kube, reference: dict[str, Any], node: str) -> dict[str, Any]:
    """The node's NRT once its zones differ from ``reference``'s (as the cooldown compares them).

    Upstream's ``GetUpdatedForNode`` also returns a refresh that only reorders a zone's
    resources, as upstream's exporter writes them, which may come before the exporter has
    accounted a new pod; these tests need the accounting itself."""
    return nrtwaiters.for_nrts(
        kube,
        [node],
        lambda nrt: not nrtcompare.is_nrt_equal(reference, nrt),
        "to account the change",
        30.0,
        interval=0.5,
    )[node]


# ----------------------------------------------------------------------------- the fixture


def test_fixture_lifecycle_accounts_a_pod_and_cools_down(suite_config: SuiteConfig) -> None:
    kube = suite_config.kube
    fxt = Fixture.setup(suite_config, BASE_NAME)
    base, _, suffix = fxt.namespace.rpartition("-")
    assert base == BASE_NAME and 0 <= int(suffix) < 10000
    ns = kube.get(k.NAMESPACE, fxt.namespace)
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert ns["metadata"]["labels"]["security.openshift.io/scc.podSecurityLabelSync"] == "false"
    assert nrtutil.accumulate_names(fxt.initial_nrts) == set(WORKERS)

    before = fxt.settle_nrts()
    pod = kube.create(guaranteed_pod(fxt.namespace, "gu", 4, "2Gi"))
    running = waiters.for_pod_phase(kube, fxt.namespace, "gu", "Running", interval=0.25, timeout=60)
    node = running["spec"]["nodeName"]
    assert node in WORKERS
    assert scheduling.check_pod_was_scheduled_with(kube, fxt.namespace, "gu", SCHEDULER)
    reference = nrtutil.find(before, node)
    assert reference is not None
    updated = nrt_accounting_change(kube, reference, node)
    required = objects.from_guaranteed_pod(pod)
    zone = nrtconsumed.check_zone_consumed_resources_at_least(reference, updated, required, "Guaranteed")
    assert zone in ("node-0", "node-1"), nrtcompare.nrt_diff([reference], [updated])
    assert not nrtconsumed.check_equal_available_resources(reference, updated)
    # The other worker does not change, yet get_updated returns it (upstream's rule): each
    # periodic refresh writes its zones' resources in Go map order, usually another one.
    other = nrtutil.find(before, next(w for w in WORKERS if w != node))
    assert other is not None
    same = nrtupdates.get_updated(kube, [other], 30.0, interval=0.5)
    found = nrtutil.find(same, other["metadata"]["name"])
    assert found is not None and nrtconsumed.check_equal_available_resources(other, found)
    assert found["metadata"]["resourceVersion"] != other["metadata"]["resourceVersion"]
    assert not nrtcompare.is_nrt_unchanged(other, found)

    fxt.teardown()  # namespace gone, then the cooldown: NRTs back to the initial state
    assert kube.get_or_none(k.NAMESPACE, fxt.namespace) is None
    assert nrtwaiters.for_nrts_equal_to(kube, fxt.initial_nrts, interval=0.5, timeout=5.0)


def test_cooldown_fails_with_the_nrt_diff_and_skip_bypasses_it(suite_config: SuiteConfig) -> None:
    kube = suite_config.kube
    short = dataclasses.replace(
        suite_config, timeouts=dataclasses.replace(suite_config.timeouts, settle_timeout=4.0)
    )
    outside = Fixture.setup(suite_config, "e2e-test-library-outside", avoid_cooldown=True)
    try:
        fxt = Fixture.setup(short, BASE_NAME)
        # A pod outside the test namespace keeps 2 CPUs: the teardown cannot restore the NRTs.
        kube.create(objects.pin_pod_to_node(guaranteed_pod(outside.namespace, "keeps", 2), WORKERS[0]))
        waiters.for_pod_phase(kube, outside.namespace, "keeps", "Running", interval=0.25, timeout=60)
        reference = nrtutil.find(fxt.initial_nrts, WORKERS[0])
        assert reference is not None
        nrt_accounting_change(kube, reference, WORKERS[0])
        with pytest.raises(AssertionError) as failure:
            fxt.teardown()
        text = str(failure.value)
        assert text.startswith(COOLDOWN_FAILED)
        assert f"different: ['{WORKERS[0]}']" in text
        assert "cpu -2, memory -1073741824" in text  # the exporter writes plain integers

        skipped = Fixture.setup(short, BASE_NAME)
        with pytest.raises(pytest.skip.Exception):
            skipped.skip("not applicable here")
        assert skipped.skipped
        skipped.teardown()  # no cooldown, hence no failure
        assert not skipped.skipped
    finally:
        outside.teardown()
    nrtwaiters.for_nrts_equal_to(kube, suite_config.nrt_reference, interval=0.5, timeout=30.0)


# ----------------------------------------------------------------------------- padding


def test_padder_pads_one_node_and_the_nrts_converge(fxt: Fixture) -> None:
    kube = fxt.kube
    target = of(cpu=4, memory="4Gi")
    padder = Padder(kube, fxt.namespace, poll_interval=0.25)
    padder.nodes(1).until_available_is_resource_list_per_zone({"cpu": "4", "memory": "4Gi"})
    padder.pad(60.0, label_selector="node-role.kubernetes.io/worker")
    padded = padder.get_padded_nodes()
    assert len(padded) == 1 and padded[0] in WORKERS
    pods = kube.list(k.POD, fxt.namespace, label_selector={PADDER_LABEL: ""})
    assert len(pods) == 2  # one per zone
    assert all(p["metadata"]["name"].startswith("padder-") for p in pods)
    assert {p["spec"]["nodeSelector"]["kubernetes.io/hostname"] for p in pods} == set(padded)
    pins = sorted(
        r for p in pods for r in p["spec"]["containers"][0]["resources"]["limits"] if r.startswith("kni.")
    )
    assert pins == ["kni.node/numacell00", "kni.node/numacell01"]  # each pad pod pinned to its zone
    for zone in _nrt(kube, padded[0]).zones:
        available = nrtutil.available_from_zone(zone)
        assert available["cpu"] <= target["cpu"] and available["memory"] <= target["memory"], zone

    # 6 CPUs fit no zone of the padded node: the pod must land on the other worker.
    fxt.settle_nrts()
    kube.create(guaranteed_pod(fxt.namespace, "big", 6))
    running = waiters.for_pod_phase(kube, fxt.namespace, "big", "Running", interval=0.25, timeout=60)
    assert running["spec"]["nodeName"] != padded[0]

    padder.clean()
    assert kube.list(k.POD, fxt.namespace, label_selector={PADDER_LABEL: ""}) == []
    assert padder.get_padded_nodes() == []


# ----------------------------------------------------------------------------- events


def test_scheduling_checks_against_real_events(fxt: Fixture) -> None:
    kube, ns = fxt.kube, fxt.namespace
    # 60 CPUs fit no worker: FailedScheduling from the scheduler, and the pod stays Pending.
    kube.create(guaranteed_pod(ns, "huge", 60))
    wait_for(
        lambda: kube.events_for(ns, "huge"),
        lambda events: any(e.get("reason") == "FailedScheduling" for e in events),
        f"a FailedScheduling event for {ns}/huge",
        30.0,
        interval=0.25,
    )
    assert scheduling.check_pod_scheduling_failed(kube, ns, "huge", SCHEDULER)
    assert not scheduling.check_pod_was_scheduled_with(kube, ns, "huge", SCHEDULER)
    assert scheduling.check_pod_scheduling_failed_with_msg(kube, ns, "huge", SCHEDULER, "Insufficient cpu")
    assert not scheduling.check_pod_scheduling_failed(kube, ns, "huge", "topo-aware-scheduler")
    waiters.while_in_pod_phase(kube, ns, "huge", "Pending", interval=0.2, steps=3)

    # 24 CPUs fit a worker but no NUMA zone: bound directly, the kubelet rejects it.
    pod = guaranteed_pod(ns, "wide", 24)
    pod["spec"]["nodeName"] = WORKERS[1]
    kube.create(pod)
    waiters.for_pod_phase(kube, ns, "wide", "Failed", interval=0.25, timeout=60)
    check = scheduling.check_pod_kubelet_reject_with_topology_affinity_error(kube, ns, "wide")
    assert check, check
    with pytest.raises(waiters.WaitTimeout, match=r"(?s)can no longer happen.*TopologyAffinityError"):
        waiters.for_pod_phase(kube, ns, "wide", "Running", interval=0.25, timeout=10)

    with pytest.raises(scheduling.NoEventsError, match="no event received"):
        scheduling.check_pod_was_scheduled_with(kube, ns, "never-created", SCHEDULER)
    assert "cannot fetch the scheduler leader's logs" in scheduling.dump_scheduler_logs(kube, ns, [pod])


# ----------------------------------------------------------------------------- waiters


def test_workload_waiters_and_baseload(fxt: Fixture) -> None:
    kube, ns = fxt.kube, fxt.namespace
    dp = kube.create(objects.new_test_deployment(2, {"app": "dp"}, None, ns, "dp"))
    done = waiters.for_deployment_complete(kube, dp, interval=0.25, timeout=60)
    assert done["status"]["availableReplicas"] == 2
    waiters.for_deployment_replicas_readiness(kube, dp, 2, interval=0.25, timeout=10)

    rs = kube.create(
        objects.new_test_replicaset_with_pod_spec(
            1, {"app": "rs"}, None, ns, "rs", objects.pause_pod_spec("rs")
        )
    )
    waiters.for_replicaset_complete(kube, rs, interval=0.25, timeout=60)

    ds = kube.create(
        objects.new_test_daemonset({"app": "ds"}, {"node-role.kubernetes.io/worker": ""}, ns, "ds")
    )
    waiters.for_daemonset_pods(kube, ns, "ds", len(WORKERS), interval=0.25, timeout=60)
    waiters.for_daemonset_ready(kube, ns, "ds", interval=0.25, timeout=60)
    assert ds["metadata"]["name"] == "ds"

    spec = {"containers": [{"name": "c", "image": DEFAULT_IMAGE, "command": ["python", "-c", "pass"]}]}
    kube.create(objects.new_test_job(ns, "job", spec))
    waiters.for_job_completed(kube, ns, "job", interval=0.25, timeout=60)

    kube.delete(k.DEPLOYMENT, "dp", ns)
    waiters.for_pods_all_deleted(
        kube, kube.list(k.POD, ns, label_selector={"app": "dp"}), interval=0.25, timeout=60
    )

    load = baseload.for_node(kube, WORKERS[0])
    assert load.name == WORKERS[0]
    assert load.cpu.value() % 2 == 0 and load.memory.nanos % 10**18 == 0


def test_pin_pod_to_places_the_pod_in_that_zone(fxt: Fixture) -> None:
    kube, ns = fxt.kube, fxt.namespace
    before = fxt.settle_nrts()
    for zone_id, name in ((1, "in-zone-1"), (0, "in-zone-0")):
        reference = nrtutil.find(nrtutil.list_nrts(kube), WORKERS[0])
        assert reference is not None
        pod = objects.pin_pod_to(guaranteed_pod(ns, name, 2), WORKERS[0], zone_id)
        kube.create(pod)
        waiters.for_pod_phase(kube, ns, name, "Running", interval=0.25, timeout=60)
        updated = nrt_accounting_change(kube, reference, WORKERS[0])
        consumed = nrtconsumed.check_zone_consumed_resources_at_least(
            reference, updated, objects.from_guaranteed_pod(pod), "Guaranteed"
        )
        assert consumed == f"node-{zone_id}", nrtcompare.nrt_diff([reference], [updated])
    assert nrtcompare.nrt_diff(before, nrtutil.list_nrts(kube)).startswith(f"{WORKERS[0]}:\n  node-0: cpu -2")


def test_kube_reads_pod_logs_and_a_kubelets_endpoint(fxt: Fixture) -> None:
    """The two reads that are no API objects, through the dynamic client's raw requests."""
    kube, ns = fxt.kube, fxt.namespace
    command = ["python", "-c", "print('hello from the pod')"]
    pod = objects.new_test_pod_pause(ns, "talker")
    pod["spec"]["containers"][0].update(image=DEFAULT_IMAGE, command=command, args=[])
    pod["spec"]["restartPolicy"] = "Never"
    kube.create(pod)
    waiters.for_pod_phase(kube, ns, "talker", "Succeeded", interval=0.25, timeout=60)
    container = pod["spec"]["containers"][0]["name"]
    assert kube.pod_logs(ns, "talker") == "hello from the pod\n"
    assert kube.pod_logs(ns, "talker", container, since_seconds=600) == "hello from the pod\n"
    with pytest.raises(k.ApiError) as missing:
        kube.pod_logs(ns, "nobody")
    assert missing.value.status == 404

    configz = json.loads(kube.node_proxy(WORKERS[0], "configz"))
    assert configz["kubeletconfig"]["topologyManagerPolicy"] == "single-numa-node"


def test_kube_keeps_its_discovery_cache_where_it_is_told(fxt: Fixture, tmp_path: Path) -> None:
    """An embedded cluster's session client keeps the dynamic client's discovery cache in the
    cluster's state directory: by default it is one file per server address in the temporary
    directory, left behind by every cluster (a new port each time, and a stale one for the next
    cluster that gets that port)."""
    cache = tmp_path / "discovery.json"
    kube = k.Kube(fxt.kube.api_client, discovery_cache=cache)
    assert kube.get(k.Kind("v1", "Namespace"), fxt.namespace)["metadata"]["name"] == fxt.namespace
    cached = json.loads(cache.read_text())
    assert cached["version"]["kubernetes"]["gitVersion"].endswith("-nrop")
