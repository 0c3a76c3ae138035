"""The suite's --setup / BeforeSuite / AfterSuite / --teardown end to end on an embedded ``default`` cluster.

One cluster on the shipped ``default`` profile runs as the suite's embedded target
(``nrop-cluster up``, fixture ``embedded``), with nothing of the stack installed. In file
order, as a run of the suite does:

0. a kind whose CRD went away reads as not served even while the client's discovery cache still
   knows it; without the stack, the preconditions name what is missing and teardown has nothing to do;
1. :func:`nrop.suite.install.stack.setup` installs the operator from its rendered manifests, creates
   the NROP and NRS samples and returns once both report healthy conditions, the exporter
   DaemonSet is ready, every worker has an NRT and the scheduler Deployment is ready;
2. :func:`nrop.suite.install.nodetopology.check_nodes_topology` finds nothing missing on that cluster;
3. :func:`nrop.suite.install.infra.before_suite` deploys numacell (the project's image), labels the
   nodes, records the NRT reference (with the numacell resources in every zone) and turns
   the operator's scheduler image validation off; :func:`~nrop.suite.install.infra.after_suite`
   undoes all of it (and keeps the infrastructure when told to);
4. :func:`nrop.suite.install.stack.teardown` removes the NRS, the NROP and the operator, leaving
   none of their objects.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from _helpers_e2e import POLL_INTERVAL, install_nrt_crd

from nrop.api.images import DEFAULT_IMAGE
from nrop.numacell import deviceplugin as numacell
from nrop.suite.e2e import config, objects
from nrop.suite.e2e.kube import (
    CRD,
    DAEMONSET,
    DEPLOYMENT,
    NAMESPACE,
    NODE,
    NROP,
    NROSCHED,
    NRT,
    POD,
    Kube,
    UnknownKindError,
)
from nrop.suite.e2e.nrt.waiters import for_nrts
from nrop.suite.e2e.wait.polling import wait_for
from nrop.suite.install import infra, nodetopology, numacelldeploy, stack

pytestmark = [pytest.mark.slow, pytest.mark.cluster_profile("default")]

WORKERS = ["worker-0", "worker-1"]
TIMINGS = stack.StackTimings.local()
INFRA_TIMINGS = infra.InfraTimings.local()
#: An image the embedded kubelets do not know (``kubelet/knownimages.py``): simulated, it runs no program.
NOT_A_DEVICE_PLUGIN = "quay.io/example/not-a-device-plugin:1"


@pytest.fixture(scope="module")
def installed(kube: Kube) -> stack.Stack:
    return stack.setup(kube, image=DEFAULT_IMAGE, refresh_period="2s", timings=TIMINGS)


def _env_of_manager(kube: Kube) -> dict[str, str]:
    dp = kube.get(DEPLOYMENT, stack.OPERATOR_DEPLOYMENT, stack.OPERATOR_NAMESPACE)
    (manager,) = [c for c in dp["spec"]["template"]["spec"]["containers"] if c["name"] == "manager"]
    return {e["name"]: e.get("value", "") for e in manager.get("env") or ()}


def _labels(kube: Kube, node: str) -> dict[str, str]:
    return kube.get(NODE, node)["metadata"].get("labels") or {}


def test_a_removed_crd_reads_as_not_served_despite_a_stale_discovery_cache(kube: Kube) -> None:
    install_nrt_crd(kube)
    assert kube.list(NRT) == []  # discovery now knows the kind
    name = "noderesourcetopologies.topology.node.k8s.io"
    kube.delete(CRD, name)
    wait_for(lambda: kube.get_or_none(CRD, name), lambda crd: crd is None, "the NRT CRD to be gone", 20.0)
    # The collection now answers 404: the cache is dropped and the kind reads as not served.
    with pytest.raises(UnknownKindError, match="does not serve NodeResourceTopology"):
        kube.list(NRT)
    with pytest.raises(UnknownKindError):
        kube.list(NRT)


def test_without_the_stack_preconditions_say_what_is_missing_and_teardown_has_nothing_to_do(
    kube: Kube,
) -> None:
    assert nodetopology.check_nodes_topology(kube) == [
        'NUMAResourcesOperator "numaresourcesoperator" not found: no TAS-enabled nodes',
        "the cluster does not serve NodeResourceTopology objects (topology.node.k8s.io/v1alpha2)",
        'Not enough nodes with "single-numa-node" topology found 0 needed 2',
        'failed to find NRT for "worker-0"',
        'failed to find NRT for "worker-1"',
    ]
    with pytest.raises(infra.InfraError, match="NUMA fixture initialization failed: NUMAResourcesOperator"):
        infra.before_suite(kube, environ={}, image=DEFAULT_IMAGE, timings=INFRA_TIMINGS)
    stack.teardown(kube, image=DEFAULT_IMAGE, timings=TIMINGS)


def test_setup_installs_the_stack_through_the_operator(kube: Kube, installed: stack.Stack) -> None:
    assert installed.namespace == "numaresources"
    assert installed.scheduler_name == "topo-aware-scheduler"
    assert installed.rte_daemonsets == ["numaresources/numaresourcesoperator-worker"]
    assert sorted(n["metadata"]["name"] for n in installed.nrts if n.get("zones")) == WORKERS
    assert stack.condition_status(installed.nrop, "Available") == "True"
    assert stack.scheduler_healthy(installed.nrosched)
    assert installed.nrop["spec"]["logLevel"] == "Debug"
    pods = kube.list(POD, "numaresources", label_selector="app=numaresources-operator")
    assert [p["status"]["phase"] for p in pods] == ["Running"]
    rte = kube.get(DAEMONSET, "numaresourcesoperator-worker", "numaresources")
    (exporter,) = rte["spec"]["template"]["spec"]["containers"]
    assert "--sleep-interval=2s" in exporter["args"], (
        "the node group's infoRefreshPeriod reaches the exporters"
    )


def test_the_cluster_meets_the_suite_preconditions(kube: Kube, installed: stack.Stack) -> None:
    assert nodetopology.check_nodes_topology(kube) == []


def test_before_suite_sets_up_the_infra_and_after_suite_removes_it(
    kube: Kube, installed: stack.Stack
) -> None:
    before_env = _env_of_manager(kube)
    data = infra.before_suite(kube, environ={}, image=DEFAULT_IMAGE, timings=INFRA_TIMINGS)
    try:
        assert data.namespace.startswith("e2e-test-infra-")
        assert data.scheduler_name == "topo-aware-scheduler"
        assert data.numacell_daemonsets == ["numacell-dp-worker-ds"]
        assert numacelldeploy.daemonset_ready(kube.get(DAEMONSET, "numacell-dp-worker-ds", data.namespace))
        reference = {n["metadata"]["name"]: n for n in data.nrt_reference}
        assert sorted(reference) == WORKERS
        for nrt in reference.values():
            assert numacelldeploy.zones_expose_numacell(nrt)
            for zone in nrt["zones"]:
                cell = int(zone["name"].rsplit("-", 1)[1])
                (res,) = [r for r in zone["resources"] if numacell.is_resource_name(r["name"])]
                assert (res["name"], str(res["capacity"])) == (numacell.resource_name(cell), "15")
        assert sorted(data.labelled_nodes) == WORKERS
        for node in WORKERS:
            assert _labels(kube, node)[config.MULTI_NUMA_LABEL] == "2"
        assert _env_of_manager(kube).get("SCHEDULER_IMAGE_VALIDATION") == "false"
        assert data.env_restore is not None
    finally:
        assert infra.after_suite(kube, data, environ={}, timings=INFRA_TIMINGS) is True
    assert kube.get_or_none(NAMESPACE, data.namespace) is None
    for node in WORKERS:
        assert config.MULTI_NUMA_LABEL not in _labels(kube, node)
    assert _env_of_manager(kube) == before_env


def test_after_suite_keeps_the_infra_when_told_to(kube: Kube, installed: stack.Stack) -> None:
    environ = {"E2E_VALIDATE_SCHEDULER_IMAGE": "true"}
    data = infra.before_suite(kube, environ=environ, image=DEFAULT_IMAGE, timings=INFRA_TIMINGS)
    assert data.env_restore is None, "validation kept on: the operator env is not touched"
    assert infra.after_suite(kube, data, environ={"E2E_NROP_INFRA_TEARDOWN_SKIP": ""}) is False
    assert kube.get_or_none(NAMESPACE, data.namespace) is not None
    assert _labels(kube, WORKERS[0])[config.MULTI_NUMA_LABEL] == "2"
    assert infra.after_suite(kube, data, environ={}, timings=INFRA_TIMINGS) is True
    assert kube.get_or_none(NAMESPACE, data.namespace) is None


def test_a_failed_before_suite_removes_what_it_created(kube: Kube, installed: stack.Stack) -> None:
    # An image the embedded kubelets do not know is simulated (pause semantics): its pods run,
    # but no device plugin registers, so the NRTs never show numacell resources. The earlier tests'
    # plugins must be gone from the NRTs first: the exporters notice at their next refresh.
    for_nrts(
        kube,
        WORKERS,
        lambda nrt: not numacelldeploy.zones_expose_numacell(nrt),
        "without numacell devices",
        30.0,
        interval=POLL_INTERVAL,
    )
    timings = replace(INFRA_TIMINGS, ready_timeout=2.0)
    # the message names the image and how to pick another
    expected = (
        r"to expose numacell resources in every zone \(the numacell image "
        r"quay\.io/example/not-a-device-plugin:1 must run a device plugin advertising "
        r"kni\.node/numacellNN; E2E_NROP_URL_NUMACELL_DEVICE_PLUGIN picks another\) within 2s"
    )
    with pytest.raises(AssertionError, match=expected):
        infra.before_suite(kube, environ={}, image=NOT_A_DEVICE_PLUGIN, timings=timings)
    leftovers = [
        ns["metadata"]["name"]
        for ns in kube.list(NAMESPACE)
        if ns["metadata"]["name"].startswith("e2e-test-infra-")
        and not ns["metadata"].get("deletionTimestamp")
    ]
    assert leftovers == []
    for node in WORKERS:
        assert config.MULTI_NUMA_LABEL not in _labels(kube, node)


def test_teardown_removes_the_stack(kube: Kube, installed: stack.Stack) -> None:
    scheduler: dict[str, Any] = installed.nrosched["status"]["deployment"]
    stack.teardown(kube, image=DEFAULT_IMAGE, timings=TIMINGS)
    assert kube.get_or_none(NROSCHED, objects.NROSCHED_NAME) is None
    assert kube.get_or_none(NROP, objects.NROP_NAME) is None
    assert kube.get_or_none(DEPLOYMENT, scheduler["name"], scheduler["namespace"]) is None
    assert kube.get_or_none(NAMESPACE, stack.OPERATOR_NAMESPACE) is None
    assert kube.list(POD, label_selector="name=resource-topology") == []
    assert kube.list(POD, label_selector="app=secondary-scheduler") == []
    # A second teardown finds nothing to do.
    stack.teardown(kube, image=DEFAULT_IMAGE, timings=TIMINGS)
    # NRT objects belong to the nodes, not to the stack: the CRD stays, as after upstream's uninstall.
    assert isinstance(kube.list(NRT), list)
