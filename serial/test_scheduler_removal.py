"""Scheduler removal (upstream scheduler_removal.go): deleting the NUMAResourcesScheduler
removes the secondary scheduler; running workloads keep running, new ones stay pending, and
they are scheduled once the scheduler is created again.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from typing import Any

import _accounting_helpers as acct
import pytest

from nrop.suite import consistently, objects, scheduling, spec, wait_for, waiters
from nrop.suite import kube as k8s

log = logging.getLogger(__name__)

pytestmark = spec(
    "[serial][disruptive][scheduler][schedrst] numaresources scheduler removal on a live cluster",
    "Serial",
    "disruptive",
    "scheduler",
    "schedrst",
    "feature:schedrst",
)
FIXTURE_BASENAME = "e2e-test-sched-remove"


@pytest.fixture
def nrs(fxt: Any, suite_config: Any) -> dict:
    """The Describe's BeforeEach: the scheduler is Available; its object as it is now."""
    return scheduling.check_nro_scheduler_available(fxt.kube, suite_config.nrosched["metadata"]["name"])


def restore_scheduler(kube: Any, nrs: dict) -> None:
    """Create the NUMAResourcesScheduler again, with the same name and spec."""
    name = nrs["metadata"]["name"]
    log.info("re-creating the NRO Scheduler object: %s", name)
    kube.create(
        {
            "apiVersion": nrs["apiVersion"],
            "kind": nrs["kind"],
            "metadata": {"name": name},
            "spec": nrs["spec"],
        }
    )


@pytest.fixture
def scheduler_restored(fxt: Any, suite_config: Any, nrs: dict) -> Iterator[None]:
    """The AfterEach of "when removing ...": re-create the suite's scheduler object (the spec
    deleted it; a create that fails fails the spec, as upstream's) and wait until Available."""
    yield
    restore_scheduler(fxt.kube, suite_config.nrosched)
    scheduling.check_nro_scheduler_available(fxt.kube, suite_config.nrosched["metadata"]["name"])


@pytest.fixture
def scheduler_back(fxt: Any, nrs: dict) -> Iterator[None]:
    """Cleanup only, for a spec that failed before re-creating the scheduler: the later specs
    need it (upstream leaves the cluster without it). A no-op when the spec passed."""
    yield
    if fxt.kube.get_or_none(k8s.NROSCHED, nrs["metadata"]["name"]) is None:
        restore_scheduler(fxt.kube, nrs)
        scheduling.check_nro_scheduler_available(fxt.kube, nrs["metadata"]["name"])


def _delete_scheduler(kube: Any, nrs: dict) -> None:
    deployment = nrs["status"]["deployment"]
    log.info("deleting the NRO Scheduler object: %s", nrs["metadata"]["name"])
    # upstream asserts the delete: an object already gone fails the spec too
    kube.delete(k8s.NROSCHED, nrs["metadata"]["name"], missing_ok=False)
    # the scheduler deployment must be gone
    wait_for(
        lambda: kube.get_or_none(k8s.DEPLOYMENT, deployment["name"], deployment["namespace"]),
        lambda dp: dp is None,
        f"deployment {deployment['namespace']}/{deployment['name']} to be deleted",
        60,
        interval=10,
    )


def create_deployment(fxt: Any, suite_config: Any, name: str, scheduler: str) -> dict:
    """Two best-effort pause replicas for ``scheduler``."""
    pod_spec = acct.pause_pod_spec(f"{name}-cnt", suite_config.pause_image, scheduler=scheduler)
    dp = objects.new_test_deployment_with_pod_spec(2, {"test": "test-dp"}, {}, fxt.namespace, name, pod_spec)
    log.info("creating a test deployment %s", name)
    return fxt.kube.create(dp)


def create_deployment_sync(fxt: Any, suite_config: Any, name: str, scheduler: str) -> dict:
    """``createDeploymentSync``: create, then complete within 1 m (10 s polls)."""
    dp = create_deployment(fxt, suite_config, name, scheduler)
    log.info("waiting for the test deployment %s to be complete and ready", name)
    try:
        waiters.for_deployment_complete(fxt.kube, dp, timeout=60, interval=10)
    except (AssertionError, k8s.ApiError) as err:
        raise AssertionError(f"Deployment {acct.q(name)} is not up & running after 1m0s: {err}") from None
    return dp


def _expect_deployment_state(kube: Any, dp: dict, complete: bool) -> None:
    """Three times, ten seconds apart (upstream's ``maxStep`` loop): the deployment is (not) complete."""
    name, namespace = dp["metadata"]["name"], dp["metadata"]["namespace"]
    state = "ready" if complete else "pending"
    steps = itertools.count(1)

    def look() -> dict:
        log.info("ensuring the deployment %s keeps being %s %d/3", name, state, next(steps))
        return kube.get(k8s.DEPLOYMENT, name, namespace)

    def is_complete(updated: dict) -> bool:
        return waiters.is_deployment_complete(
            int(dp["metadata"].get("generation", 0)), updated.get("status") or {}, int(dp["spec"]["replicas"])
        )

    consistently(
        look,
        lambda updated: is_complete(updated) == complete,
        f"deployment {acct.q(name)} to keep being {state}",
        interval=10,
        steps=3,
        failure=lambda _: f"deployment {acct.q(name)} become {'unready' if complete else 'ready'}",
    )


class TestWhenRemovingTheTopologyAwareSchedulerFromALiveCluster:
    pytestmark = spec("when removing the topology aware scheduler from a live cluster")

    @spec("[test_id:47593][case:1] should keep existing workloads running", "tier1")
    def test_keep_existing_workloads(
        self, fxt: Any, suite_config: Any, nrs: dict, scheduler_restored: None
    ) -> None:
        kube = fxt.kube
        dp = create_deployment_sync(fxt, suite_config, "testdp", suite_config.scheduler_name)
        _delete_scheduler(kube, nrs)
        _expect_deployment_state(kube, dp, complete=True)

    @spec(
        "[test_id:49093][case:2] should keep new scheduled workloads pending",
        "tier1",
        "unsched",
        "feature:unsched",
    )
    def test_keep_new_workloads_pending(
        self, fxt: Any, suite_config: Any, nrs: dict, scheduler_restored: None
    ) -> None:
        kube = fxt.kube
        _delete_scheduler(kube, nrs)
        dp = create_deployment(fxt, suite_config, "testdp", suite_config.scheduler_name)
        _expect_deployment_state(kube, dp, complete=False)


class TestWhenRestartingTheTopologyAwareSchedulerInALiveCluster:
    pytestmark = spec("when restarting the topology aware scheduler in a live cluster")

    @spec(
        "[test_id:48069][case:1] should schedule any pending workloads submitted while the scheduler was "
        "unavailable",
        "tier2",
    )
    def test_schedule_pending_after_restart(
        self, fxt: Any, suite_config: Any, nrs: dict, scheduler_back: None
    ) -> None:
        kube = fxt.kube
        _delete_scheduler(kube, nrs)
        dp = create_deployment(fxt, suite_config, "testdp", nrs["status"]["schedulerName"])
        _expect_deployment_state(kube, dp, complete=False)

        restore_scheduler(kube, nrs)
        scheduling.check_nro_scheduler_available(kube, nrs["metadata"]["name"])
        # upstream's waiter here has the default 3m timeout (interval 30s)
        waiters.for_deployment_complete(kube, dp, timeout=180, interval=30)
