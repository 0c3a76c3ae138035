"""Serial specs of upstream ``metrics.go``: the operator and RTE metrics are served over HTTPS.

Upstream runs ``curl -k https://127.0.0.1:<port>/metrics`` inside the pod; here the same
endpoint is fetched over HTTPS through the API server's ``pods/proxy`` (the certificate is not
verified either), which every Kubernetes API server serves and needs no curl in the image.
The metric names asserted are upstream's.
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

OPERATOR_METRICS_PORT = "8080"
RTE_METRICS_PORT = "2112"


@pytest.fixture
def nrop(kube: Kube, suite_config: Any) -> dict[str, Any]:
    obj = acct.expect_ok(
        lambda: kube.get(NROP, suite_config.nrop["metadata"]["name"]), "failed to get the NRO resource"
    )
    assert (obj.get("status") or {}).get("nodeGroups"), "node groups not reported, nothing to do"
    return obj


def _metrics(kube: Kube, pod: dict[str, Any], port: str) -> str:
    log.info(
        "fetching https metrics on port %s of pod %s/%s",
        port,
        pod["metadata"]["namespace"],
        pod["metadata"]["name"],
    )
    text = podexec.fetch_pod_https(kube, pod, port, "metrics")
    assert text, "empty metrics output"
    return text


class TestWhenTestingOperatorMetricsEndpoint:
    pytestmark = spec("when testing operator metrics endpoint")

    @spec("[test_id:85769] should be able to fetch metrics from the manager container")
    def test_85769_operator_metrics(self, kube: Kube, nrop: dict[str, Any]) -> None:
        pod = operands.operator_pod(kube, nrop)
        text = _metrics(kube, pod, OPERATOR_METRICS_PORT)
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
        text = _metrics(kube, pods[0], RTE_METRICS_PORT)
        assert "rte_noderesourcetopology_writes_total" in text, (
            "rte_noderesourcetopology_writes_total metric not found"
        )
        assert "rte_wakeup_delay_milliseconds" in text, "rte_wakeup_delay_milliseconds metric not found"
