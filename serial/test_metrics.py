"""Serial specs of upstream ``metrics.go``: the operator and RTE metrics are served over HTTPS.

As upstream, ``fetch_metrics_from_pod`` runs ``/bin/curl -k https://127.0.0.1:<port>/metrics``
in the pod's first container through ``pods/exec`` and looks for upstream's metric names in what
it prints. The images ship curl (the project's image: ``nrop-curl``; on the embedded cluster the
container's ``127.0.0.1`` is its pod, as in a pod's network namespace).
"""

from __future__ import annotations

import logging
from typing import Any

import _accounting_helpers as acct
import _operand_helpers as operands
import _podexec_helpers as podexec
import pytest

from nrop.suite import Kube, spec
from nrop.suite.e2e.kube import NROP, POD

log = logging.getLogger(__name__)

pytestmark = spec("metrics exposed securely", "Serial", "feature:metrics")

METRICS_ADDRESS = "127.0.0.1"
OPERATOR_METRICS_PORT = "8080"
RTE_METRICS_PORT = "2112"


@pytest.fixture
def nrop(kube: Kube, suite_config: Any) -> dict[str, Any]:
    obj = acct.expect_ok(
        lambda: kube.get(NROP, suite_config.nrop["metadata"]["name"]), "failed to get the NRO resource"
    )
    assert (obj.get("status") or {}).get("nodeGroups"), "node groups not reported, nothing to do"
    return obj


def _go_strings(words: list[str]) -> str:
    """Go's ``%q`` of a ``[]string``."""
    return "[" + " ".join(acct.q(word) for word in words) + "]"


def fetch_metrics_from_pod(kube: Kube, pod: dict[str, Any], metrics_address: str, metrics_port: str) -> str:
    """``fetchMetricsFromPod``: curl the pod's HTTPS metrics endpoint from inside the pod."""
    endpoint = podexec.join_host_port(metrics_address, metrics_port)
    key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
    log.info("running curl command to fetch metrics")
    cmd = ["/bin/curl", "-k", f"https://{endpoint}/metrics"]
    log.info("executing command args=%s pod=%s", cmd, key)
    result = podexec.exec_in_pod(kube, pod, cmd)
    assert result.returncode == 0, (
        f"failed exec command on pod. pod={acct.q(key)}; cmd={_go_strings(cmd)}; "
        f"err={result.error(cmd)}; stderr={acct.q(result.stderr)}"
    )
    assert result.stdout, result.stdout
    return result.stdout


class TestWhenTestingOperatorMetricsEndpoint:
    pytestmark = spec("when testing operator metrics endpoint")

    @spec("[test_id:85769] should be able to fetch metrics from the manager container")
    def test_85769_operator_metrics(self, kube: Kube, nrop: dict[str, Any]) -> None:
        pod = operands.operator_pod(kube, nrop)
        text = fetch_metrics_from_pod(kube, pod, METRICS_ADDRESS, OPERATOR_METRICS_PORT)
        assert (
            'workqueue_adds_total{controller="numaresourcesoperator",name="numaresourcesoperator"}' in text
        ), "workqueue_adds_total operator metric not found"
        assert (
            'workqueue_adds_total{controller="numaresourcesscheduler",name="numaresourcesscheduler"}' in text
        ), "workqueue_adds_total scheduler metric not found"


class TestWhenTestingRTEMetricsEndpoint:
    pytestmark = spec("when testing RTE metrics endpoint")

    @spec("[test_id:85770] should be able to fetch metrics from the RTE pod container")
    def test_85770_rte_metrics(self, kube: Kube, nrop: dict[str, Any]) -> None:
        namespace = nrop["status"]["nodeGroups"][0]["daemonsets"]["namespace"]
        pods = kube.list(POD, namespace, label_selector=f"name={operands.RTE_POD_LABEL_NAME}")
        assert pods, "There should be at least one worker pod"
        text = fetch_metrics_from_pod(kube, pods[0], METRICS_ADDRESS, RTE_METRICS_PORT)
        assert "rte_noderesourcetopology_writes_total" in text, (
            "rte_noderesourcetopology_writes_total metric not found"
        )
        assert "rte_wakeup_delay_milliseconds" in text, "rte_wakeup_delay_milliseconds metric not found"
