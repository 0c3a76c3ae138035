"""The topology-manager configuration the RTE reads, checked against the NRTs.

Upstream's ``test/internal/configuration``: ``ValidateAndExtractRTEConfigData`` parses the RTE
ConfigMap's ``config.yaml`` (the kubelet's topology-manager policy and scope, strictly, or the
legacy layout) and requires the single-numa-node policy; ``CheckTopologyManagerConfigMatching``
lists where an NRT's attributes disagree with it. Pure, table-tested in
``tests/unit/serial/test_tmconfig_helpers.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

log = logging.getLogger(__name__)

RTE_CONFIG_KEY = "config.yaml"

_RTE_CONFIG_KEYS = {"kubelet", "resourceExclude", "podExclude"}
_RTE_LEGACY_KEYS = {"topologyManagerPolicy", "topologyManagerScope", "excludeList", "podExcludes"}


@dataclass(frozen=True)
class TMConfig:
    policy: str
    scope: str


def rte_tm_config(configmap: Mapping[str, Any]) -> TMConfig:
    """``configuration.ValidateAndExtractRTEConfigData``: parse ``config.yaml`` strictly (falling
    back to the legacy layout) and require the single-numa-node policy."""
    meta = configmap.get("metadata") or {}
    raw = (configmap.get("data") or {}).get(RTE_CONFIG_KEY)
    if raw is None:
        raise AssertionError(f"config.yaml not found in ConfigMap {meta.get('namespace')}/{meta.get('name')}")
    data = yaml.safe_load(raw) or {}
    if not isinstance(data, dict):
        raise AssertionError(f"config.yaml of ConfigMap {meta.get('name')} is not a mapping")
    if set(data) <= _RTE_CONFIG_KEYS and set(data.get("kubelet") or {}) <= {
        "topologyManagerPolicy",
        "topologyManagerScope",
    }:
        kubelet = data.get("kubelet") or {}
        conf = TMConfig(
            str(kubelet.get("topologyManagerPolicy", "")), str(kubelet.get("topologyManagerScope", ""))
        )
    elif set(data) <= _RTE_LEGACY_KEYS:
        log.error(
            "failed to unmarshal config.yaml; falling back to legacy config (ConfigMap %s)", meta.get("name")
        )
        conf = TMConfig(str(data.get("topologyManagerPolicy", "")), str(data.get("topologyManagerScope", "")))
    else:
        raise AssertionError(
            f"failed to unmarshal legacy config.yaml: unknown fields {sorted(set(data) - _RTE_CONFIG_KEYS)}"
        )
    if conf.policy != "single-numa-node":
        raise AssertionError(f'invalid topologyManagerPolicy: got "{conf.policy}", want "single-numa-node"')
    return conf


def tm_config_mismatch(nrt: Mapping[str, Any], conf: TMConfig) -> str:
    """``configuration.CheckTopologyManagerConfigMatching``: empty when the NRT attributes agree."""
    problems = ""
    for attr in nrt.get("attributes") or ():
        name, value = attr.get("name"), attr.get("value")
        if name == "topologyManagerPolicy" and value != conf.policy:
            problems += f'"{name}" value is different; want: {conf.policy} got: {value}\n'
        if name == "topologyManagerScope" and conf.scope and value != conf.scope:
            problems += f'"{name}" value is different; want: {conf.scope} got: {value}\n'
    return problems
