"""Serial specs of upstream ``network_policy.go``: the operator's NetworkPolicies let the
operator, the scheduler and the RTEs reach the API server and let Prometheus scrape the metrics
endpoints; the three "must be denied" cases are known broken upstream and always skip.

Traffic is probed from inside the source pod through ``pods/exec``, as upstream: ``sh -c "curl
--connect-timeout 5 http://<host>:<port>"`` (the shell expands ``$KUBERNETES_SERVICE_HOST``), and
the endpoint is reachable when the command succeeds; an HTTPS endpoint answers plain HTTP with
Go's 400, which curl prints and still exits 0. A cluster that refuses ``pods/exec`` cannot run a
probe, and the Prometheus cases need OpenShift's ``openshift-monitoring`` Prometheus: on a
Kubernetes cluster without one those skip saying so. On embedded clusters the specs run on the
``openshift`` profile, which has that Prometheus pod, as upstream's lanes do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import _node_helpers as nodeh
import _openshift_helpers as ocp
import _operand_helpers as operands
import _podexec_helpers as podexec
import pytest
from kubernetes.client.exceptions import ApiException

from nrop.suite import Kube, entry, spec
from nrop.suite.e2e.kube import NROP, NROSCHED, POD

log = logging.getLogger(__name__)

pytestmark = [spec("network policies are applied", "feature:netpols"), pytest.mark.nrop_profile("openshift")]

PROMETHEUS_NAMESPACE = "openshift-monitoring"
# the answers of an API server that does not serve pods/exec (unknown subresource, no upgrade)
EXEC_REFUSED = frozenset({400, 404, 405, 501})
PROMETHEUS_LABELS = {"app.kubernetes.io/name": "prometheus"}


@dataclass
class Pods:
    """BeforeAll: the pods traffic goes from and to (prometheus is None when absent)."""

    operator: dict[str, Any]
    scheduler: dict[str, Any]
    rte_worker: dict[str, Any]
    prometheus: dict[str, Any] | None


@dataclass(frozen=True)
class TrafficCase:
    from_pod: Callable[[Pods], dict[str, Any] | None]
    to_host: Callable[[Pods], str]
    to_port: str
    should_allow: bool
    description: str
    skip_broken: bool = False
    needs_prometheus: bool = False


@pytest.fixture(scope="class")
def pods(kube: Kube, suite_config: Any) -> Pods:
    nrop = kube.get(NROP, suite_config.nrop["metadata"]["name"])
    nrs = kube.get(NROSCHED, suite_config.nrosched["metadata"]["name"])
    assert (nrop.get("status") or {}).get("nodeGroups")
    namespace = nrop["status"]["nodeGroups"][0]["daemonsets"]["namespace"]
    operator = operands.operator_pod(kube, nrop)
    scheduler = operands.scheduler_pod(kube, nrs)
    rtes = kube.list(POD, namespace, label_selector=f"name={operands.RTE_POD_LABEL_NAME}")
    assert rtes
    prometheus = kube.list(POD, PROMETHEUS_NAMESPACE, label_selector=nodeh.selector_text(PROMETHEUS_LABELS))
    if not prometheus and ocp.detect_platform(kube).is_openshift_like:
        raise AssertionError(f"no Prometheus pod in {PROMETHEUS_NAMESPACE}")
    return Pods(operator, scheduler, rtes[0], prometheus[0] if prometheus else None)


def _pod_ip(pod: dict[str, Any] | None) -> str:
    return str(((pod or {}).get("status") or {}).get("podIP", ""))


API_HOST, API_PORT = "$KUBERNETES_SERVICE_HOST", "$KUBERNETES_SERVICE_PORT"

CASES = [
    entry(
        "[test_id:85771] operator -> API server",
        TrafficCase(
            lambda p: p.operator, lambda p: API_HOST, API_PORT, True, "operator should access API server"
        ),
    ),
    entry(
        "[test_id:85772] scheduler -> API server",
        TrafficCase(
            lambda p: p.scheduler, lambda p: API_HOST, API_PORT, True, "scheduler should access API server"
        ),
    ),
    entry(
        "[test_id:85773] rte worker -> API server",
        TrafficCase(
            lambda p: p.rte_worker, lambda p: API_HOST, API_PORT, True, "rte worker should access API server"
        ),
    ),
    entry(
        "[test_id:85774] prometheus operator -> numaresouces operator metrics endpoint",
        TrafficCase(
            lambda p: p.prometheus,
            lambda p: _pod_ip(p.operator),
            "8080",
            True,
            "prometheus operator pod should access numaresources operator metrics endpoint",
            needs_prometheus=True,
        ),
    ),
    entry(
        "[test_id:85775] prometheus operator -> numaresouces rte worker endpoint",
        TrafficCase(
            lambda p: p.prometheus,
            lambda p: _pod_ip(p.rte_worker),
            "2112",
            True,
            "prometheus operator pod should access rte worker metrics endpoint",
            needs_prometheus=True,
        ),
    ),
    entry(
        "[test_id:85776] scheduler -> operator",
        TrafficCase(
            lambda p: p.scheduler,
            lambda p: _pod_ip(p.operator),
            "8081",
            False,
            "scheduler should NOT access operator",
            skip_broken=True,
        ),
    ),
    entry(
        "[test_id:85777] numaresouces operator -> prometheus operator",
        TrafficCase(
            lambda p: p.operator,
            lambda p: _pod_ip(p.prometheus),
            "8081",
            False,
            "numaresources operator should NOT access prometheus operator pod",
            skip_broken=True,
            needs_prometheus=True,
        ),
    ),
    entry(
        "[test_id:85778] prometheus operator -> numaresouces operator",
        TrafficCase(
            lambda p: p.prometheus,
            lambda p: _pod_ip(p.operator),
            "8081",  # readinessProbe!
            False,
            "prometheus operator pod should NOT access numaresources operator pod's readiness probe endpoint)",
            skip_broken=True,
            needs_prometheus=True,
        ),
    ),
]


def traffic_test(kube: Kube, source: dict[str, Any], destination_ip: str, destination_port: str) -> bool:
    """``trafficTest``: whether ``source`` can connect to the destination over HTTP."""
    endpoint = podexec.join_host_port(destination_ip, destination_port)
    meta = source["metadata"]
    log.info(
        'verifying HTTP egress connectivity from pod "%s/%s" to endpoint %s',
        meta["namespace"],
        meta["name"],
        endpoint,
    )
    cmd = ["sh", "-c", f"curl --connect-timeout 5 http://{endpoint}"]
    result = podexec.exec_in_pod(kube, source, cmd)
    if result.returncode != 0:
        log.info("curl failed: stdout=%r, stderr=%r, err=%s", result.stdout, result.stderr, result.error(cmd))
    return result.returncode == 0


class TestTrafficBehavior:
    pytestmark = spec("traffic behavior")

    @pytest.mark.parametrize("case", CASES)
    def test_traffic(self, kube: Kube, case: TrafficCase, request: pytest.FixtureRequest) -> None:
        if case.skip_broken:
            pytest.skip("currently known broken: " + case.description)
        pods: Pods = request.getfixturevalue("pods")
        if case.needs_prometheus and pods.prometheus is None:
            pytest.skip(f"requires OpenShift: no Prometheus pod in {PROMETHEUS_NAMESPACE}")
        source = case.from_pod(pods)
        assert source is not None, "source pod should not be nil"
        log.info("Running traffic test: %s", case.description)
        try:
            reachable = traffic_test(kube, source, case.to_host(pods), case.to_port)
        except ApiException as exc:
            if exc.status in EXEC_REFUSED:
                pytest.skip(f"requires pods/exec: the API server refused it ({exc.status} {exc.reason})")
            raise
        log.info("Traffic test result: reachable=%s", reachable)
        assert reachable == case.should_allow, case.description
