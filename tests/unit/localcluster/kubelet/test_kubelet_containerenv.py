"""Table tests of container environments (``kubelet/decisions/containerenv.py``): envFrom, env, downward API, expansion."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from nrop.localcluster.kubelet.decisions.containerenv import (
    ConfigError,
    DownwardFacts,
    container_env,
    expand,
    expand_command,
)

FACTS = DownwardFacts(pod_ip="127.17.0.2", host_ip="127.0.1.2", allocatable={"cpu": "30", "memory": "31Gi"})
POD = {
    "metadata": {
        "name": "p",
        "namespace": "ns",
        "uid": "u-1",
        "labels": {"app": "rte", "tier": "node"},
        "annotations": {"note": "hi"},
    },
    "spec": {
        "nodeName": "worker-0",
        "serviceAccountName": "reader",
        "containers": [
            {
                "name": "c",
                "resources": {"limits": {"cpu": "1500m", "memory": "100Mi"}, "requests": {"cpu": "250m"}},
            },
            {"name": "side"},
        ],
    },
}
CONFIG_MAPS = {"cm": {"data": {"A": "1", "B": "two", "BAD=KEY": "x"}}}
SECRETS = {"sec": {"data": {"TOKEN": base64.b64encode(b"s3cret").decode()}}}


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return container_env({"name": "c", **container}, POD, FACTS, CONFIG_MAPS.get, SECRETS.get)


def field(path: str) -> dict[str, Any]:
    return {"valueFrom": {"fieldRef": {"fieldPath": path}}}


def resource(name: str, divisor: str | None = None, container: str | None = None) -> dict[str, Any]:
    selector: dict[str, Any] = {"resource": name}
    if divisor:
        selector["divisor"] = divisor
    if container:
        selector["containerName"] = container
    return {"valueFrom": {"resourceFieldRef": selector}}


C_RESOURCES = POD["spec"]["containers"][0]["resources"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("var", "value"),
    [
        pytest.param(field("metadata.name"), "p", id="name"),
        pytest.param(field("metadata.namespace"), "ns", id="namespace"),
        pytest.param(field("metadata.uid"), "u-1", id="uid"),
        pytest.param(field("metadata.labels['app']"), "rte", id="label"),
        pytest.param(field("metadata.annotations['note']"), "hi", id="annotation"),
        pytest.param(field("spec.nodeName"), "worker-0", id="node-name"),
        pytest.param(field("spec.serviceAccountName"), "reader", id="service-account"),
        pytest.param(field("status.podIP"), "127.17.0.2", id="pod-ip"),
        pytest.param(field("status.hostIP"), "127.0.1.2", id="host-ip"),
        pytest.param(resource("limits.cpu"), "2", id="cpu-limit-rounded-up"),
        pytest.param(resource("limits.cpu", "1m"), "1500", id="cpu-limit-millis"),
        pytest.param(resource("requests.cpu"), "1", id="cpu-request-rounded-up"),
        pytest.param(resource("limits.memory"), str(100 * 1024**2), id="memory-limit-bytes"),
        pytest.param(resource("limits.memory", "1Mi"), "100", id="memory-limit-divisor"),
        pytest.param(resource("requests.memory"), "0", id="no-request-is-zero"),
        pytest.param(resource("limits.cpu", container="side"), "30", id="no-limit-is-node-allocatable"),
        pytest.param(
            {"valueFrom": {"configMapKeyRef": {"name": "cm", "key": "B"}}}, "two", id="configmap-key"
        ),
        pytest.param(
            {"valueFrom": {"secretKeyRef": {"name": "sec", "key": "TOKEN"}}}, "s3cret", id="secret-key"
        ),
    ],
)
def test_value_from(var: dict[str, Any], value: str) -> None:
    resources = {"resources": C_RESOURCES}
    assert env_of({**resources, "env": [{"name": "X", **var}]}) == {"X": value}


def test_env_from_then_env_in_order_with_expansion() -> None:
    env = env_of(
        {
            "envFrom": [{"configMapRef": {"name": "cm"}}, {"secretRef": {"name": "sec"}, "prefix": "S_"}],
            "env": [
                {"name": "A", "value": "overridden"},
                {"name": "URL", "value": "http://$(POD_IP):$(PORT)/$(A)"},
                {"name": "POD_IP", **field("status.podIP")},
                {"name": "LATER", "value": "$(POD_IP) $$(POD_IP) $(NOPE)"},
            ],
        }
    )
    assert env == {
        "A": "overridden",
        "B": "two",
        "S_TOKEN": "s3cret",
        "URL": "http://$(POD_IP):$(PORT)/overridden",
        "POD_IP": "127.17.0.2",
        "LATER": "127.17.0.2 $(POD_IP) $(NOPE)",
    }


@pytest.mark.parametrize(
    ("container", "message"),
    [
        pytest.param(
            {"envFrom": [{"configMapRef": {"name": "gone"}}]}, 'configmap "gone" not found', id="envfrom-cm"
        ),
        pytest.param(
            {"env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k"}}}]},
            'secret "gone" not found',
            id="secret",
        ),
        pytest.param(
            {"env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "Z"}}}]},
            "couldn't find key Z in ConfigMap ns/cm",
            id="missing-key",
        ),
        pytest.param(
            {"env": [{"name": "X", **field("spec.hostname")}]},
            'unsupported fieldPath: "spec.hostname"',
            id="field",
        ),
        pytest.param(
            {"env": [{"name": "X", **resource("limits.gpu")}]},
            "unsupported container resource: limits.gpu",
            id="resource",
        ),
    ],
)
def test_unresolvable_references_are_config_errors(container: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        env_of(container)
    assert str(raised.value) == message
    assert raised.value.reason == "CreateContainerConfigError"


def test_optional_references_are_skipped() -> None:
    env = env_of(
        {
            "envFrom": [{"configMapRef": {"name": "gone", "optional": True}}],
            "env": [
                {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "Z", "optional": True}}},
                {"name": "Y", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k", "optional": True}}},
            ],
        }
    )
    assert env == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(A)", "1"),
        ("x$(A)y$(B)", "x1y2"),
        ("$$(A)", "$(A)"),
        ("$$", "$"),
        ("$(MISSING)", "$(MISSING)"),
        ("$(A", "$(A"),
        ("$A", "$A"),
        ("cost: 5$", "cost: 5$"),
    ],
)
def test_expand(text: str, expected: str) -> None:
    assert expand(text, {"A": "1", "B": "2"}) == expected


def test_command_expansion_uses_the_final_environment() -> None:
    assert expand_command(["--ip=$(POD_IP)", "$(X)"], {"POD_IP": "127.17.0.2"}) == ["--ip=127.17.0.2", "$(X)"]
