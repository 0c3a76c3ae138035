"""The OpenShift flavour's monitoring workload: found as upstream's specs find Prometheus."""

from __future__ import annotations

from nrop.localcluster.controllers import clustermonitoring


def test_the_workload_is_found_as_upstream_finds_prometheus() -> None:
    deployment = clustermonitoring.prometheus("localhost/numaresources-operator-tests:latest")
    template = deployment["spec"]["template"]
    # upstream's network-policy BeforeAll lists openshift-monitoring pods by this label
    assert template["metadata"]["labels"]["app.kubernetes.io/name"] == "prometheus"
    assert deployment["metadata"]["namespace"] == clustermonitoring.NAMESPACE == "openshift-monitoring"
    (container,) = template["spec"]["containers"]
    assert container["command"] == ["nrop-prometheus"]
    assert container["args"] == ["--web.listen-address=$(POD_IP):9090"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/-/ready", "port": 9090}
    assert clustermonitoring.namespace()["metadata"]["labels"]["openshift.io/cluster-monitoring"] == "true"
