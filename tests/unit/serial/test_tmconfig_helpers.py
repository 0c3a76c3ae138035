"""Tables of serial/_tmconfig_helpers.py: ``ValidateAndExtractRTEConfigData`` (the RTE ConfigMap's
``config.yaml``, current and legacy layouts, the single-numa-node requirement) and
``CheckTopologyManagerConfigMatching`` (NRT attributes against it)."""

from __future__ import annotations

import _tmconfig_helpers as tmconfig
import pytest

TMConfig = tmconfig.TMConfig


def _cm(text: str | None) -> dict:
    data = {} if text is None else {tmconfig.RTE_CONFIG_KEY: text}
    return {"metadata": {"namespace": "ns", "name": "rte-worker"}, "data": data}


CURRENT = "kubelet:\n  topologyManagerPolicy: single-numa-node\n  topologyManagerScope: pod\n"


@pytest.mark.parametrize(
    ("text", "conf"),
    [
        pytest.param(CURRENT, TMConfig("single-numa-node", "pod"), id="current"),
        pytest.param(
            CURRENT + "resourceExclude:\n  '*': [memory]\npodExclude: {}\n",
            TMConfig("single-numa-node", "pod"),
            id="current-with-excludes",
        ),
        pytest.param(
            "kubelet:\n  topologyManagerPolicy: single-numa-node\n",
            TMConfig("single-numa-node", ""),
            id="current-no-scope",
        ),
        pytest.param(
            "topologyManagerPolicy: single-numa-node\ntopologyManagerScope: container\nexcludeList: {}\n",
            TMConfig("single-numa-node", "container"),
            id="legacy",
        ),
    ],
)
def test_rte_tm_config_parses(text, conf) -> None:
    assert tmconfig.rte_tm_config(_cm(text)) == conf


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(None, "config.yaml not found in ConfigMap ns/rte-worker", id="no-key"),
        pytest.param(
            "- a\n- b\n", "config.yaml of ConfigMap rte-worker is not a mapping", id="not-a-mapping"
        ),
        pytest.param(
            "bogus: 1\n", "failed to unmarshal legacy config.yaml: unknown fields ['bogus']", id="unknown"
        ),
        pytest.param(
            "kubelet:\n  topologyManagerPolicy: single-numa-node\n  bogus: 1\n",
            "failed to unmarshal legacy config.yaml: unknown fields []",
            id="unknown-kubelet-field",
        ),
        pytest.param(
            "kubelet:\n  topologyManagerPolicy: restricted\n",
            'invalid topologyManagerPolicy: got "restricted", want "single-numa-node"',
            id="wrong-policy",
        ),
        pytest.param(
            "kubelet: {}\n",
            'invalid topologyManagerPolicy: got "", want "single-numa-node"',
            id="no-policy",
        ),
        pytest.param(
            "topologyManagerPolicy: best-effort\n",
            'invalid topologyManagerPolicy: got "best-effort", want "single-numa-node"',
            id="legacy-wrong-policy",
        ),
    ],
)
def test_rte_tm_config_refuses(text, message) -> None:
    with pytest.raises(AssertionError) as err:
        tmconfig.rte_tm_config(_cm(text))
    assert str(err.value) == message


def _nrt(policy: str | None, scope: str | None) -> dict:
    attrs = [{"name": "nodeTopologyPodsFingerprint", "value": "pfp0v001"}]
    if policy is not None:
        attrs.append({"name": "topologyManagerPolicy", "value": policy})
    if scope is not None:
        attrs.append({"name": "topologyManagerScope", "value": scope})
    return {"attributes": attrs}


@pytest.mark.parametrize(
    ("nrt", "conf", "problems"),
    [
        pytest.param(_nrt("single-numa-node", "pod"), TMConfig("single-numa-node", "pod"), "", id="match"),
        pytest.param(_nrt(None, None), TMConfig("single-numa-node", "pod"), "", id="no-attributes"),
        pytest.param({}, TMConfig("single-numa-node", "pod"), "", id="no-attribute-list"),
        pytest.param(
            _nrt("restricted", "pod"),
            TMConfig("single-numa-node", "pod"),
            '"topologyManagerPolicy" value is different; want: single-numa-node got: restricted\n',
            id="policy-differs",
        ),
        pytest.param(
            _nrt("single-numa-node", "container"),
            TMConfig("single-numa-node", "pod"),
            '"topologyManagerScope" value is different; want: pod got: container\n',
            id="scope-differs",
        ),
        pytest.param(
            _nrt("single-numa-node", "container"),
            TMConfig("single-numa-node", ""),
            "",
            id="scope-not-configured",
        ),
        pytest.param(
            _nrt("none", "container"),
            TMConfig("single-numa-node", "pod"),
            '"topologyManagerPolicy" value is different; want: single-numa-node got: none\n'
            '"topologyManagerScope" value is different; want: pod got: container\n',
            id="both-differ",
        ),
    ],
)
def test_tm_config_mismatch(nrt, conf, problems) -> None:
    assert tmconfig.tm_config_mismatch(nrt, conf) == problems
