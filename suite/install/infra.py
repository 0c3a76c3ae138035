"""The serial suite's BeforeSuite and AfterSuite: preconditions and shared infrastructure.

Owns what upstream's ``test/e2e/serial/config`` and ``e2e_serial_test.go`` do around the
whole run, in the same order, talking to the cluster only through :class:`~nrop.suite.e2e.kube.Kube`:

1. :func:`dump_environment` — every ``E2E_NROP_*`` / ``E2E_RTE_*`` variable;
2. :func:`nrop.suite.install.nodetopology.check_nodes_topology` — whether the nodes will do
   (upstream's ``CheckNodesTopology``, its own module: it reads the node groups' pools from here);
3. :func:`before_suite` — the infra namespace ``e2e-test-infra-<rand>``, the **numacell**
   device plugin (ServiceAccount, Role, RoleBinding and one DaemonSet per node-group pool,
   ``numacell-dp-<pool>-ds``), waits for the DaemonSets and for every NRT zone to expose a
   ``kni.node/numacellNN`` resource, labels every NRT node
   ``numa.hardware.openshift-kni.io/cell-count=<#zones>``, records the reference NRT list,
   and (unless ``E2E_VALIDATE_SCHEDULER_IMAGE=true``) sets ``SCHEDULER_IMAGE_VALIDATION=false``
   in the operator's environment (:func:`nrop.suite.install.operatorenv.set_operator_env`);
4. :func:`after_suite` — restores the operator env, then (unless
   ``E2E_NROP_INFRA_TEARDOWN_SKIP`` / ``E2E_INFRA_NO_TEARDOWN``) removes the labels and the
   namespace (the DaemonSets go with it).

The environment switches and the node groups' pools are pure functions over plain dicts
(tested with tables); numacell is deployed by
:func:`nrop.suite.install.numacelldeploy.deploy_numacell` and the NRTs awaited by
:func:`nrop.suite.e2e.nrt.waiters.for_nrts`; the other I/O functions are thin loops built on
:func:`nrop.suite.e2e.wait.polling.wait_for`.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from nrop.api.fielderrors import go_quote
from nrop.suite.e2e.config import MULTI_NUMA_LABEL, NUMACELL_IMAGE_VARS, numacell_image
from nrop.suite.e2e.kube import (
    NAMESPACE,
    NODE,
    NROP,
    NROSCHED,
    NRT,
    ApiError,
    Kube,
    Manifest,
    name_of,
)
from nrop.suite.e2e.nrt import waiters as nrtwaiters
from nrop.suite.e2e.objects import NROP_NAME, NROSCHED_NAME, NUMACELL_RESOURCE_NAMESPACE, new_namespace
from nrop.suite.e2e.wait.polling import wait_for
from nrop.suite.install import numacelldeploy, operatorenv
from nrop.suite.install.errors import InfraError
from nrop.suite.install.nodegroups import NodeGroupPool, mcp_finder, node_group_pools

__all__ = [
    "INFRA_NAMESPACE_BASE",
    "Infra",
    "InfraError",
    "InfraTimings",
    "after_suite",
    "before_suite",
    "dump_environment",
    "scheduler_image_validation_enabled",
    "teardown_skipped",
]

log = logging.getLogger(__name__)

INFRA_NAMESPACE_BASE = "e2e-test-infra"
SCHEDULER_IMAGE_VALIDATION = "SCHEDULER_IMAGE_VALIDATION"


# -- environment ------------------------------------------------------------------------------------


def dump_environment(environ: Mapping[str, str]) -> str:
    """``DumpEnvironment``: the ``E2E_NROP_*`` and ``E2E_RTE_*`` variables between two markers."""
    lines = ["E2E NROP environment variables dump BEGIN"]
    lines += [
        f"- {key}={value}"
        for key, value in environ.items()
        if key.startswith("E2E_NROP_") or key.startswith("E2E_RTE_")
    ]
    lines.append("E2E NROP environment variables dump END")
    return "\n".join(lines) + "\n"


def teardown_skipped(environ: Mapping[str, str]) -> bool:
    """Presence of ``E2E_NROP_INFRA_TEARDOWN_SKIP`` (or legacy ``E2E_INFRA_NO_TEARDOWN``)."""
    return "E2E_NROP_INFRA_TEARDOWN_SKIP" in environ or "E2E_INFRA_NO_TEARDOWN" in environ


def scheduler_image_validation_enabled(environ: Mapping[str, str]) -> bool:
    """``E2E_VALIDATE_SCHEDULER_IMAGE=true`` keeps the operator's scheduler image validation on."""
    return environ.get("E2E_VALIDATE_SCHEDULER_IMAGE", "").strip().lower() == "true"


# -- BeforeSuite / AfterSuite ---------------------------------------------------------------------------


@dataclass(frozen=True)
class InfraTimings:
    """Upstream's waits of the infra setup (``test/e2e/serial/config``); the embedded target polls faster."""

    #: numacell DaemonSets ready and NRT exposure (3m, polls 10s / 11s).
    ready_timeout: float = 180.0
    daemonset_interval: float = 10.0
    nrt_interval: float = 11.0
    #: Infra namespace deletion (E2E_NROP_TEST_TEARDOWN, 180s, polled every 1s).
    namespace_timeout: float = 180.0
    #: Operator Deployment rollout after an env change (15m).
    rollout_timeout: float = 900.0

    @classmethod
    def local(cls) -> InfraTimings:
        return cls(daemonset_interval=0.5, nrt_interval=0.5)


@dataclass
class Infra:
    """What :func:`before_suite` set up and found: the data of ``SuiteConfig`` and what to undo."""

    namespace: str
    nrop: Manifest
    nrosched: Manifest
    scheduler_name: str
    nrt_reference: list[Manifest]
    labelled_nodes: list[str]
    numacell_daemonsets: list[str]
    numacell_image: str
    env_restore: operatorenv.EnvRestore | None = None


def _progress(step: str, started: float) -> None:
    log.info("e2e infra: %s (%.1fs)", step, time.monotonic() - started)


def before_suite(
    kube: Kube,
    *,
    environ: Mapping[str, str],
    image: str | None = None,
    program: numacelldeploy.NumacellProgram | None = None,
    timings: InfraTimings = InfraTimings(),
    rand: Callable[[], int] = lambda: random.randrange(10000),
) -> Infra:
    """Steps 4 and 5 of upstream's BeforeSuite (call :func:`check_nodes_topology` first).

    ``image`` defaults to :func:`numacell_image` of ``environ``; ``program`` to
    :func:`~nrop.suite.install.numacelldeploy.numacell_program` of the image. Raises :class:`InfraError` when the stack is not
    there (no NROP / NRS / scheduler name) or the numacell resources never show up.
    """
    started = time.monotonic()
    nrop = kube.get_if_served(NROP, NROP_NAME)
    nrosched = kube.get_if_served(NROSCHED, NROSCHED_NAME)
    if nrop is None or nrosched is None:
        raise InfraError(
            "NUMA fixture initialization failed: "
            + ", ".join(
                f"{kind} {go_quote(name)} not found"
                for kind, name, obj in (
                    ("NUMAResourcesOperator", NROP_NAME, nrop),
                    ("NUMAResourcesScheduler", NROSCHED_NAME, nrosched),
                )
                if obj is None
            )
        )
    scheduler_name = str((nrosched.get("status") or {}).get("schedulerName") or "")
    if not scheduler_name:
        raise InfraError(
            "NUMA fixture initialization failed: NUMAResourcesScheduler reports no schedulerName"
        )
    log.info("detected scheduler name: %s", scheduler_name)
    node_groups = nrop.get("spec", {}).get("nodeGroups") or []
    if not node_groups:
        raise InfraError("cannot autodetect the TAS node groups from the cluster")
    pools = node_group_pools(node_groups, mcp_finder(kube))

    namespace = f"{INFRA_NAMESPACE_BASE}-{rand()}"
    kube.create(new_namespace(namespace))
    _progress(f"namespace {namespace} created", started)
    image = image or numacell_image(environ)
    infra = Infra(
        namespace=namespace,
        nrop=nrop,
        nrosched=nrosched,
        scheduler_name=scheduler_name,
        nrt_reference=[],
        labelled_nodes=[],
        numacell_daemonsets=[],
        numacell_image=image,
    )
    try:
        _set_up(
            kube, infra, pools, program or numacelldeploy.numacell_program(image), environ, timings, started
        )
    except BaseException:
        if not teardown_skipped(environ):
            log.info("e2e infra setup failed: removing what it created")
            try:
                _undo(kube, infra, timings, wait=False)
            except Exception:
                log.exception("e2e infra: cleaning up after the failed setup failed too")
        raise
    _progress("setup completed", started)
    return infra


def _set_up(
    kube: Kube,
    infra: Infra,
    pools: Sequence[NodeGroupPool],
    program: numacelldeploy.NumacellProgram,
    environ: Mapping[str, str],
    timings: InfraTimings,
    started: float,
) -> None:
    namespace = infra.namespace
    infra_nrts = kube.list(NRT)
    log.info("using NUMACell image %s (command %s)", infra.numacell_image, " ".join(program.command))
    ready = numacelldeploy.deploy_numacell(
        kube,
        namespace,
        pools,
        infra.numacell_image,
        program,
        timeout=timings.ready_timeout,
        interval=timings.daemonset_interval,
        progress=lambda step: _progress(step, started),
    )
    infra.numacell_daemonsets = [name_of(ds) for ds in ready]
    nrtwaiters.for_nrts(
        kube,
        [name_of(nrt) for nrt in infra_nrts],
        numacelldeploy.zones_expose_numacell,
        f"to expose numacell resources in every zone (the numacell image {infra.numacell_image} must run "
        f"a device plugin advertising {NUMACELL_RESOURCE_NAMESPACE}/numacellNN; {NUMACELL_IMAGE_VARS[0]} "
        "picks another)",
        timings.ready_timeout,
        interval=timings.nrt_interval,
    )
    _progress(f"numacell resources available on {len(infra_nrts)} NRTs", started)

    for nrt in infra_nrts:
        node, zones = name_of(nrt), len(nrt.get("zones") or ())
        log.info("adding label %s=%d to node %s", MULTI_NUMA_LABEL, zones, node)
        kube.patch(NODE, node, {"metadata": {"labels": {MULTI_NUMA_LABEL: str(zones)}}})
        infra.labelled_nodes.append(node)
    infra.nrt_reference = kube.list(NRT)
    _progress(f"recorded reference NRT data ({len(infra.nrt_reference)} objects)", started)

    if not scheduler_image_validation_enabled(environ):
        infra.env_restore = operatorenv.set_operator_env(
            kube, SCHEDULER_IMAGE_VALIDATION, "false", environ, timeout=timings.rollout_timeout
        )
        _progress("scheduler image validation disabled", started)


def _undo(kube: Kube, infra: Infra, timings: InfraTimings, *, wait: bool) -> None:
    """Remove the node labels and the infra namespace (the DaemonSets go with it)."""
    for node in infra.labelled_nodes:
        log.info("removing label %s from node %s", MULTI_NUMA_LABEL, node)
        try:
            kube.patch(NODE, node, {"metadata": {"labels": {MULTI_NUMA_LABEL: None}}})
        except ApiError as err:
            if getattr(err, "status", None) != 404:
                raise
    kube.delete(NAMESPACE, infra.namespace)
    if wait:
        wait_for(
            lambda: kube.get_or_none(NAMESPACE, infra.namespace),
            lambda ns: ns is None,
            f"namespace {infra.namespace} deleted",
            timings.namespace_timeout,
            interval=1.0,
        )


def after_suite(
    kube: Kube, infra: Infra, *, environ: Mapping[str, str], timings: InfraTimings = InfraTimings()
) -> bool:
    """Restore the operator env, then remove labels and the infra namespace unless told to keep them.

    Returns whether the infrastructure was torn down.
    """
    started = time.monotonic()
    if infra.env_restore is not None:
        operatorenv.restore_operator_env(kube, infra.env_restore, timeout=timings.rollout_timeout)
        infra.env_restore = None
        _progress("scheduler image validation settings restored", started)
    if teardown_skipped(environ):
        log.info("e2e infra teardown skipped (E2E_NROP_INFRA_TEARDOWN_SKIP / E2E_INFRA_NO_TEARDOWN)")
        return False
    _undo(kube, infra, timings, wait=True)
    _progress(f"namespace {infra.namespace} deleted", started)
    return True
