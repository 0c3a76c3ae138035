"""Serial specs of upstream ``introspection.go``: the operator and its operand end containers
with ``terminationMessagePolicy: FallbackToLogsOnError``."""

from __future__ import annotations

from typing import Any

import _accounting_helpers as acct
import _operand_helpers as operands
import pytest

from nrop.suite import Kube, spec
from nrop.suite.e2e.kube import NROP

pytestmark = spec("[serial] numaresources operator introspection", "Serial", "tier3", "feature:introspection")


class TestWhenCheckingTheNumaresourcesOperatorPodProper:
    pytestmark = spec("when checking the numaresources operator pod proper")

    @pytest.fixture
    def nrop(self, kube: Kube, suite_config: Any) -> dict[str, Any]:
        name = suite_config.nrop["metadata"]["name"]
        return acct.expect_ok(lambda: kube.get(NROP, name), f"failed to get the NRO resource: /{name}")

    @spec("should verify the terminationMessagePolicy", "terminationMessage")
    def test_operator_termination_message_policy(self, kube: Kube, nrop: dict[str, Any]) -> None:
        pod = operands.operator_pod(kube, nrop)
        for cnt in pod["spec"]["containers"]:
            assert cnt.get("terminationMessagePolicy") == operands.TERMINATION_FALLBACK, (
                f"container {cnt['name']!r}: terminationMessagePolicy {cnt.get('terminationMessagePolicy')!r}"
            )

    @spec("should set terminationMessagePolicy in the operand", "terminationMessage")
    def test_operand_termination_message_policy(self, kube: Kube, nrop: dict[str, Any]) -> None:
        dss = operands.daemonsets_by_name(kube, (nrop.get("status") or {}).get("daemonsets") or [])
        assert dss, f"unexpected DaemonSet count: {len(dss)}"
        for ds in dss:
            for cnt in ds["spec"]["template"]["spec"]["containers"]:
                assert cnt.get("terminationMessagePolicy") == operands.TERMINATION_FALLBACK, (
                    f"DaemonSet {ds['metadata']['name']!r} container {cnt['name']!r}: "
                    f"terminationMessagePolicy {cnt.get('terminationMessagePolicy')!r}"
                )
