"""The stack rides out a cut of the API server's watches without a restart and without losing an update.

The cluster, the stack and numacell are those of :mod:`stackfaults` (its fixtures and
helpers are imported: one embedded cluster in this process, the stack installed through the
operator, the operands real processes of the project's image). Two cuts, each through an admin
debug hook of the embedded API server:

* **compaction** (``POST /debug/nrop/compact``): the watch history is forgotten, every open watch
  ends with an in-stream ``410 Expired`` and resuming from an old resourceVersion gets 410 too,
  so every client has to list again;
* **drop** (``POST /debug/nrop/drop-watches``): every open watch connection is closed abruptly,
  with no final event and no end of the chunked body, as a network failure would leave it.

Straight after the cut, before the clients can have watched again, a label is put on
``worker-0`` and a guaranteed pod selecting that label (and ``worker-0``) is created for the
NUMA-aware scheduler, and the desired-hash annotation of the exporter DaemonSet is spoiled. Then:

* every watch the stack's service accounts held before the cut is open again (the API server's
  ``GET /debug/nrop/watches``): the operator's kopf watches and the scheduler's informers resumed;
* the pod is ``Scheduled`` by the NUMA-aware scheduler onto ``worker-0`` and Running with
  exclusive CPUs of one NUMA zone: its informers relisted and lost neither the pod nor the
  node's new label, both written during the cut;
* the node's NRT converges to the reference minus the pod in that zone: the exporter saw the pod
  through podresources and its NRT writes still work;
* the operator puts the spoiled annotation back (a change made during the cut), and later
  changes too (the scheduler Deployment's annotation), and both CRs stay healthy;
* no process restarted: the operator, the secondary scheduler and the exporter keep their PIDs
  and their containers' ``restartCount``.

Last, deleting the pod brings the NRTs back to the reference.

The exporters the operator renders open no watch (no ``--exclude-terminal-pods``): the cut reaches
them only through their NRT writes. The exporter's one watch, the terminal pods of its node
(:class:`~nrop.rte.terminalpods.TerminalPods`), is cut on its own by both hooks in turn, run in
this process for a node no kubelet serves: a pod that ends and one deleted during each cut are
followed, through a new watch.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

# The fixtures and helpers of the process-fault tests (same directory; pytest puts it on sys.path).
from stackfaults import (
    OPERANDS,
    TARGET,
    TIMEOUT,
    cluster_config,
    container_status,
    expected_available,
    guaranteed_pod,
    installed,
    numa_cpus,
    operand_pod,
    pod_cpus,
    process_of,
    reference,
    reverted_by_the_operator,
    scheduled_by,
    stack_healthy,
    wait_available,
    wait_for,
)

from nrop.api.restclient import RestClient
from nrop.localcluster.cluster import LocalCluster
from nrop.operator.decisions.naming import OPERATOR_NAME, SCHEDULER_DEPLOYMENT
from nrop.operator.kubeapi import DESIRED_HASH_ANNOTATION
from nrop.rte.terminalpods import TerminalPods
from nrop.suite.e2e import objects
from nrop.suite.e2e import resourcelist as rl
from nrop.suite.e2e.kube import DAEMONSET, DEPLOYMENT, NODE, POD, Kube
from nrop.suite.e2e.wait import waiters
from nrop.suite.install import stack

# The fixtures taken from stackfaults, used by name only.
__all__ = ["cluster_config", "installed", "reference"]

pytestmark = pytest.mark.slow

#: The debug hooks that cut every open watch, by the name of the cut.
CUTS = {"compaction": "/debug/nrop/compact", "drop": "/debug/nrop/drop-watches"}
#: The operands whose processes must survive the cut (the exporter: the one on TARGET).
SURVIVORS = ("operator", "scheduler", "exporter")
#: The service accounts that hold watches: the operator's (kopf) and the scheduler's (informers).
WATCHERS = (OPERATOR_NAME, SCHEDULER_DEPLOYMENT)
#: A node label written during the cut; the pod selects it.
CUT_LABEL = "watch-faults.nrop.test/cut"

Watch = tuple[str, str]


# -- the API server's debug hooks ---------------------------------------------------------------


def _debug(kube: Kube, method: str, path: str) -> dict[str, Any]:
    """One admin request to a debug hook of the embedded API server; its JSON body."""
    api = kube.api_client
    headers = {
        "Accept": "application/json",
        "Authorization": api.configuration.auth_settings()["BearerToken"]["value"],
    }
    response = api.call_api(method, api.configuration.host + path, header_params=headers)
    body = response.read()
    assert response.status == 200, body
    result: dict[str, Any] = json.loads(body)
    return result


def _open_watches(kube: Kube) -> list[dict[str, Any]]:
    """The API server's open watches: ``id`` (in opening order), ``user``, ``path`` (with the query)."""
    items: list[dict[str, Any]] = _debug(kube, "GET", "/debug/nrop/watches")["items"]
    return items


def _stack_watches(installed: stack.Stack, entries: list[dict[str, Any]], after: int = 0) -> set[Watch]:
    """``(user, resource path)`` of the watches of the stack's service accounts opened after watch ``after``."""
    prefix = f"system:serviceaccount:{installed.namespace}:"
    return {
        (w["user"], w["path"].split("?", 1)[0])
        for w in entries
        if w["user"].startswith(prefix) and w["id"] > after
    }


# -- the survivors ------------------------------------------------------------------------------


def _survivors(kube: Kube, cluster: LocalCluster, installed: stack.Stack) -> dict[str, tuple[int, int]]:
    """``{operand: (PID, restartCount)}`` of the operator, the scheduler and TARGET's exporter."""
    out = {}
    for which in SURVIVORS:
        operand = OPERANDS[which]
        pod = operand_pod(kube, installed, operand)
        restarts = int(container_status(pod, operand.container).get("restartCount") or 0)
        out[which] = (process_of(cluster, pod, operand.container), restarts)
    return out


@pytest.fixture
def cut_label(kube: Kube) -> Iterator[str]:
    """A fresh value for CUT_LABEL; the label is taken off TARGET afterwards."""
    yield uuid.uuid4().hex[:8]
    kube.patch(NODE, TARGET, {"metadata": {"labels": {CUT_LABEL: None}}})


# -- the cuts -----------------------------------------------------------------------------------


@pytest.mark.parametrize("cut", list(CUTS))
def test_the_stack_recovers_from_a_watch_cut_without_a_restart(
    cut: str,
    kube: Kube,
    cluster: LocalCluster,
    installed: stack.Stack,
    reference: dict[str, dict[str, rl.ResourceList]],
    namespace: str,
    cut_label: str,
) -> None:
    survivors = _survivors(kube, cluster, installed)
    watchers = {f"system:serviceaccount:{installed.namespace}:{sa}" for sa in WATCHERS}
    wait_for(
        lambda: _stack_watches(installed, _open_watches(kube)),
        lambda now: {user for user, _ in now} >= watchers,
        "the operator and the scheduler to watch",
        TIMEOUT,
    )
    before = _open_watches(kube)
    watches = _stack_watches(installed, before)
    last = max(w["id"] for w in before)
    ds_name = installed.rte_daemonsets[0].split("/")[1]
    desired = kube.get(DAEMONSET, ds_name, installed.namespace)["metadata"]["annotations"][
        DESIRED_HASH_ANNOTATION
    ]

    result = _debug(kube, "POST", CUTS[cut])
    if cut == "drop":
        assert _stack_watches(installed, result["dropped"]) >= watches
    else:
        assert int(result["compactedResourceVersion"]) > 0

    # Writes during the cut, before the clients can have listed again.
    kube.patch(NODE, TARGET, {"metadata": {"labels": {CUT_LABEL: cut_label}}})
    pod = guaranteed_pod(namespace, installed.scheduler_name)
    pod["spec"]["nodeSelector"][CUT_LABEL] = cut_label
    kube.create(pod)
    kube.patch(
        DAEMONSET,
        ds_name,
        {"metadata": {"annotations": {DESIRED_HASH_ANNOTATION: "spoiled"}}},
        installed.namespace,
    )

    # The cut ended every watch the stack had open, and the operator and the scheduler watch again:
    # new watches, on every resource they watched before.
    wait_for(
        lambda: {w["id"] for w in _open_watches(kube)} & {w["id"] for w in before},
        lambda still: not still,
        f"every watch open before the {cut} to have ended",
        TIMEOUT,
    )
    wait_for(
        lambda: _stack_watches(installed, _open_watches(kube), after=last),
        lambda now: now >= watches,
        f"every watch of the stack to be open again after the {cut}",
        TIMEOUT,
    )

    # (a) the scheduler saw the pod and the label, both written during the cut.
    running = waiters.for_pod_phase(kube, namespace, "guaranteed", "Running", interval=0.5, timeout=TIMEOUT)
    assert running["spec"]["nodeName"] == TARGET
    assert scheduled_by(kube, namespace, "guaranteed") == [installed.scheduler_name]
    cpus = pod_cpus(cluster, TARGET, namespace, "guaranteed")
    assert len(cpus) == 2
    zones = [zone for zone, zone_cpus in numa_cpus(TARGET, cluster).items() if cpus <= zone_cpus]
    assert len(zones) == 1, f"CPUs {cpus} span NUMA zones"

    # (b) the exporter accounts the pod in its NRT; the operator reconciles the change made during
    # the cut and one made after it.
    wait_available(
        kube, expected_available(reference, zones[0]), f"the reference minus the pod in {zones[0]}"
    )
    wait_for(
        lambda: kube.get(DAEMONSET, ds_name, installed.namespace)["metadata"]["annotations"].get(
            DESIRED_HASH_ANNOTATION
        ),
        lambda value: value == desired,
        f"the operator to put back the annotation spoiled during the {cut}",
        TIMEOUT,
    )
    reverted_by_the_operator(kube, DEPLOYMENT, SCHEDULER_DEPLOYMENT, installed.namespace)
    wait_for(lambda: kube, stack_healthy, "both CRs to be healthy", TIMEOUT)

    # No process was restarted to get there.
    assert _survivors(kube, cluster, installed) == survivors

    kube.delete(POD, "guaranteed", namespace, grace_period_seconds=0)
    waiters.for_pod_deleted(kube, namespace, "guaranteed", timeout=TIMEOUT)
    wait_available(kube, reference, "the reference once the pod is gone")


def test_the_exporters_terminal_pod_watch_recovers_from_a_watch_cut(
    kube: Kube, rest_client: RestClient, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The exporter's only watch (``--exclude-terminal-pods``; the operator does not turn it on) is
    :class:`~nrop.rte.terminalpods.TerminalPods`, run here in-process for a node no kubelet serves
    (the pods' phases are written by the test). It lists only after a failure, so what it learns after
    each cut comes through its recovery. A 410 is a plain relist, as for client-go's
    reflector: an info line, no failure and no back-off."""
    caplog.set_level(logging.INFO, logger=TerminalPods.__module__)
    node = f"ghost-{uuid.uuid4().hex[:6]}"
    watcher = TerminalPods(rest_client, node)
    watcher.start()

    def ended(name: str, phase: str) -> None:
        pod = objects.new_test_pod_pause(namespace, name)
        pod["spec"]["nodeName"] = node
        kube.create(pod)
        kube.patch(POD, name, {"status": {"phase": phase}}, namespace, subresource="status")

    def its_watch(after: int = 0) -> list[dict[str, Any]]:
        return [
            w
            for w in _open_watches(kube)
            if w["id"] > after and f"spec.nodeName={node}" in urllib.parse.unquote(w["path"])
        ]

    try:
        assert watcher.synced.wait(TIMEOUT)
        ended("done-0", "Succeeded")
        wait_for(
            watcher.current, lambda pods: pods == {(namespace, "done-0")}, "the first terminal pod", TIMEOUT
        )
        for step, cut in enumerate(CUTS, start=1):
            (watch,) = wait_for(
                its_watch, lambda w: len(w) == 1, "the exporter's terminal-pod watch", TIMEOUT
            )
            caplog.clear()
            _debug(kube, "POST", CUTS[cut])
            # During the cut: one pod ends, the previous one is deleted.
            ended(f"done-{step}", "Failed")
            kube.delete(POD, f"done-{step - 1}", namespace, grace_period_seconds=0)
            wait_for(
                watcher.current,
                lambda pods, step=step: pods == {(namespace, f"done-{step}")},
                f"the terminal pods to follow the changes made during the {cut}",
                TIMEOUT,
            )
            wait_for(
                lambda watch=watch: its_watch(after=watch["id"]),
                lambda w: len(w) == 1,
                f"the exporter to watch again after the {cut}",
                TIMEOUT,
            )
            if cut == "compaction":
                said = [
                    (r.levelname, r.getMessage()) for r in caplog.records if r.name == TerminalPods.__module__
                ]
                assert [level for level, _ in said] == ["INFO"], said
                assert "watch expired (410 Expired: too old resource version" in said[0][1], said
    finally:
        watcher.stop()
