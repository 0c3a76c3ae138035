"""The operator installed through the embedded OLM, and its env changed the way upstream's BeforeSuite does.

One in-process cluster on the shipped ``default`` profile, whose OLM install timeout is
:data:`INSTALL_TIMEOUT` instead of OLM's 5 minutes: upstream's env change deletes the
Deployment while OLM is installing it, which OLM only repairs once that timeout failed the
CSV. In file order:

0. OLM's kinds are served and empty: a directly installed operator has no Subscription, so
   :mod:`nrop.suite.install.operatorenv` (upstream's ``SetOperatorEnvVar``) changes and restores a
   variable on the Deployment; :func:`nrop.suite.install.stack.teardown` removes it;
1. :func:`nrop.suite.install.stack.olm_manifests` applied: the CSV reaches ``Succeeded``, the
   Subscription records it as installed, and the operator Deployment OLM rendered from the CSV
   carries OLM's labels, a non-blocking owner reference to the CSV and the Subscription's env;
2. :func:`nrop.suite.install.operatorenv.set_operator_env` changes one variable through the Subscription
   (the Deployment rolls out with it) and :func:`~nrop.suite.install.operatorenv.restore_operator_env`
   puts it back;
3. deleting the CSV deletes its Deployment; :func:`nrop.suite.install.stack.teardown` removes the rest.
"""

from __future__ import annotations

from typing import Any

import pytest

from nrop.api.images import DEFAULT_IMAGE
from nrop.localcluster.cluster import ClusterConfig
from nrop.localcluster.controllers import ControllerSettings
from nrop.suite.e2e.kube import DEPLOYMENT, NAMESPACE, Kube
from nrop.suite.e2e.wait.polling import wait_for
from nrop.suite.install import operatorenv, stack

pytestmark = [pytest.mark.slow]

NS = stack.OPERATOR_NAMESPACE
TIMINGS = stack.StackTimings.local()
SUB_ENV = {"NROP_OLM_E2E": "from-subscription"}
TIMEOUT = 180.0
INSTALL_TIMEOUT = 5.0


@pytest.fixture(scope="module")
def cluster_config() -> ClusterConfig:
    """This module's cluster (``tests/conftest.py``'s ``cluster_thread``)."""
    return ClusterConfig(
        profile="default",
        bookmark_interval=1.0,
        controllers=ControllerSettings(olm_install_timeout=INSTALL_TIMEOUT),
    )


def _manager_env(dp: dict[str, Any]) -> dict[str, str]:
    (manager,) = [c for c in dp["spec"]["template"]["spec"]["containers"] if c["name"] == "manager"]
    return {e["name"]: e.get("value", "") for e in manager.get("env") or ()}


def _csv(kube: Kube) -> dict[str, Any] | None:
    return kube.get_or_none(stack.CLUSTERSERVICEVERSION, stack.csv_name(), NS)


def test_olm_kinds_are_served_and_empty_for_a_direct_install(kube: Kube) -> None:
    from nrop.operator.decisions.manifests import install_manifests

    for manifest in install_manifests(NS, DEFAULT_IMAGE):
        kube.apply(manifest)
    wait_for(
        lambda: kube.get_or_none(DEPLOYMENT, stack.OPERATOR_DEPLOYMENT, NS),
        stack.deployment_ready,
        "the directly installed operator deployment to be ready",
        TIMEOUT,
        interval=0.5,
    )
    # what upstream's findOperatorSubscription lists: an empty list, so it takes the Deployment path
    assert kube.list(stack.SUBSCRIPTION, NS) == []
    assert kube.list(stack.CLUSTERSERVICEVERSION) == []
    assert kube.list(stack.OPERATORGROUP) == []
    restore = operatorenv.set_operator_env(kube, "NROP_OLM_E2E", "direct", {}, timeout=TIMEOUT)
    assert restore is not None and restore.subscription is None
    assert _manager_env(kube.get(DEPLOYMENT, stack.OPERATOR_DEPLOYMENT, NS))["NROP_OLM_E2E"] == "direct"
    operatorenv.restore_operator_env(kube, restore, timeout=TIMEOUT)
    dp = kube.get(DEPLOYMENT, stack.OPERATOR_DEPLOYMENT, NS)
    assert "NROP_OLM_E2E" not in _manager_env(dp) and stack.deployment_ready(dp)
    stack.teardown(kube, image=DEFAULT_IMAGE, timings=TIMINGS)


def test_install_through_olm_renders_the_deployment_from_the_csv(kube: Kube) -> None:
    for manifest in stack.olm_manifests(NS, DEFAULT_IMAGE, SUB_ENV):
        kube.apply(manifest)
    csv = wait_for(
        lambda: _csv(kube),
        lambda c: stack.csv_phase(c) == "Succeeded",
        "the CSV to succeed",
        TIMEOUT,
        interval=0.5,
    )
    phases = iter(c["phase"] for c in csv["status"]["conditions"])
    assert all(p in phases for p in ("Pending", "InstallReady", "Installing", "Succeeded"))  # in this order
    sub = kube.get(stack.SUBSCRIPTION, stack.OPERATOR_PACKAGE, NS)
    assert sub["status"]["installedCSV"] == stack.csv_name()
    assert sub["status"]["currentCSV"] == stack.csv_name()
    assert sub["status"]["state"] == "AtLatestKnown"
    dp = wait_for(
        lambda: kube.get_or_none(DEPLOYMENT, stack.OPERATOR_DEPLOYMENT, NS),
        stack.deployment_ready,
        "the operator deployment to be ready",
        TIMEOUT,
        interval=0.5,
    )
    labels = dp["metadata"]["labels"]
    assert labels["olm.owner"] == stack.csv_name()
    assert labels["olm.owner.kind"] == "ClusterServiceVersion"
    assert labels["olm.owner.namespace"] == NS
    assert labels["olm.managed"] == "true"
    assert "olm.deployment-spec-hash" in labels
    assert all(labels[k] == v for k, v in stack.OPERATOR_LABELS.items())
    (ref,) = dp["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"], ref["blockOwnerDeletion"]) == (
        "ClusterServiceVersion",
        stack.csv_name(),
        csv["metadata"]["uid"],
        False,
    )
    env = _manager_env(dp)
    assert env["NROP_OLM_E2E"] == "from-subscription"
    assert env["OPERATOR_CONDITION_NAME"] == stack.csv_name()


@pytest.mark.kubectl
def test_kubectl_gets_subscriptions_and_csvs(kubectl: Any) -> None:
    out = kubectl("get", "subscriptions,csv", "-n", NS).stdout
    assert "subscription.operators.coreos.com/numaresources-operator" in out
    csv_line = next(
        line for line in out.splitlines() if stack.csv_name() in line and "clusterserviceversion" in line
    )
    assert csv_line.split()[-1] == "Succeeded"
    assert "numaresources-operator" in kubectl("get", "og", "-n", NS, "-o", "name").stdout


def test_operator_env_is_changed_through_the_subscription_and_restored(kube: Kube) -> None:
    before = kube.get(DEPLOYMENT, stack.OPERATOR_DEPLOYMENT, NS)["metadata"]["uid"]
    restore = operatorenv.set_operator_env(kube, "NROP_OLM_E2E", "changed", {}, timeout=TIMEOUT)
    assert restore is not None and restore.subscription == stack.OPERATOR_PACKAGE
    sub = kube.get(stack.SUBSCRIPTION, stack.OPERATOR_PACKAGE, NS)
    assert {"name": "NROP_OLM_E2E", "value": "changed"} in sub["spec"]["config"]["env"]
    dp = kube.get(DEPLOYMENT, stack.OPERATOR_DEPLOYMENT, NS)
    assert dp["metadata"]["uid"] != before  # deleted and re-created by OLM, as upstream's wait does
    assert _manager_env(dp)["NROP_OLM_E2E"] == "changed"
    assert stack.deployment_ready(dp)
    assert operatorenv.set_operator_env(kube, "NROP_OLM_E2E", "changed", {}, timeout=TIMEOUT) is None

    operatorenv.restore_operator_env(kube, restore, timeout=TIMEOUT)
    sub = kube.get(stack.SUBSCRIPTION, stack.OPERATOR_PACKAGE, NS)
    assert sub["spec"]["config"]["env"] == [{"name": k, "value": v} for k, v in SUB_ENV.items()]
    dp = kube.get(DEPLOYMENT, stack.OPERATOR_DEPLOYMENT, NS)
    assert _manager_env(dp)["NROP_OLM_E2E"] == "from-subscription"
    wait_for(
        lambda: _csv(kube), lambda c: stack.csv_phase(c) == "Succeeded", "the CSV to succeed again", TIMEOUT
    )


def test_an_edited_subscription_rolls_the_deployment_without_help(kube: Kube) -> None:
    env = [{"name": k, "value": v} for k, v in SUB_ENV.items()] + [{"name": "EXTRA", "value": "1"}]
    kube.patch(stack.SUBSCRIPTION, stack.OPERATOR_PACKAGE, {"spec": {"config": {"env": env}}}, NS)
    wait_for(
        lambda: kube.get(DEPLOYMENT, stack.OPERATOR_DEPLOYMENT, NS),
        lambda dp: _manager_env(dp).get("EXTRA") == "1" and stack.deployment_ready(dp),
        "the deployment to roll out with EXTRA=1",
        TIMEOUT,
        interval=0.5,
    )
    wait_for(
        lambda: _csv(kube), lambda c: stack.csv_phase(c) == "Succeeded", "the CSV to succeed again", TIMEOUT
    )


def test_deleting_the_csv_deletes_its_deployment_and_teardown_removes_the_rest(kube: Kube) -> None:
    kube.delete(stack.SUBSCRIPTION, stack.OPERATOR_PACKAGE, NS)
    kube.delete(stack.CLUSTERSERVICEVERSION, stack.csv_name(), NS)
    wait_for(
        lambda: kube.get_or_none(DEPLOYMENT, stack.OPERATOR_DEPLOYMENT, NS),
        lambda dp: dp is None,
        "the CSV's deployment to be garbage collected",
        TIMEOUT,
        interval=0.5,
    )
    stack.teardown(kube, image=DEFAULT_IMAGE, timings=TIMINGS)
    assert kube.get_or_none(NAMESPACE, NS) is None
    assert kube.list(stack.OPERATORGROUP) == []
    assert kube.list(stack.CLUSTERSERVICEVERSION) == []
