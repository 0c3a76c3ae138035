"""The registry of every label a spec of the serial suite may carry, and their pytest marker names.

Upstream tags specs with Ginkgo labels (``test/e2e/label/label.go``): tiers, kinds,
platforms, cluster types, ``feature:<topic>`` labels and ad-hoc scenario labels. Here each
one is declared once with what it means, so that a typo in a test is an error at import time (pytest's
``--strict-markers`` in spirit) and ``pytest --markers`` documents them all.

pytest marker names cannot hold ``:`` or ``-`` usefully, so a label maps to a marker name
by one rule (:func:`marker_name`): ``:`` becomes ``__`` and ``-`` becomes ``_``
(``feature:tmpol`` → ``feature__tmpol``, ``mno-masters-schedulable`` →
``mno_masters_schedulable``). Labels keep their upstream spelling everywhere else
(reports, ``--label-filter``, dry-run listings).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "EXTRA_LABEL",
    "FEATURE_TOPICS",
    "LABELS",
    "SUITE_LABEL",
    "TIERS",
    "Kind",
    "Label",
    "UnknownLabelError",
    "label_for_marker",
    "marker_name",
    "rewrite_mark_expression",
    "tier_labels_up_to",
    "validate",
]


class Kind(StrEnum):
    """The families of labels (upstream ``test/e2e/label`` groups them the same way)."""

    SUITE = "suite"
    TIER = "tier"
    KIND = "kind"
    PLATFORM = "platform"
    CLUSTER_TYPE = "cluster type"
    FEATURE = "feature"
    SCENARIO = "scenario"


@dataclass(frozen=True)
class Label:
    name: str
    kind: Kind
    description: str

    @property
    def marker(self) -> str:
        return marker_name(self.name)


class UnknownLabelError(ValueError):
    """A spec uses a label that is not in the registry."""


SUITE_LABEL = "e2e:serial"
#: a spec of this project, not upstream's (``serial/test_extras.py``)
EXTRA_LABEL = "extra"
TIERS = ("tier0", "tier1", "tier2", "tier3")

# Active feature topics (upstream internal/api/features/_topics.json) with what they cover.
FEATURE_TOPICS: dict[str, str] = {
    "config": "operator configuration management (node groups, log level, KubeletConfig tracking)",
    "nonreg": "non-regression scenarios",
    "hostlevel": "host-level resources (ephemeral storage) are not NUMA-accounted",
    "resacct": "resource accounting in NRT objects",
    "cache": "scheduler cache (overreserve) behaviour",
    "stall": "scheduler cache stalls and their unblocking",
    "schedrst": "scheduler removal, restart and rename",
    "rtetols": "RTE DaemonSet tolerations",
    "overhead": "RuntimeClass pod overhead accounting",
    "wlplacement": "NUMA-aware workload placement",
    "unsched": "workloads that cannot be aligned stay unschedulable",
    "nonrt": "placement with NRT updates paused (infoRefreshPause)",
    "taint": "placement considering taints and tolerations",
    "nodelabel": "placement considering node selectors and affinity",
    "byres": "placement decided by specific resource requests",
    "tmpol": "placement per topology-manager policy and scope",
    "schedattrwatch": "the scheduler follows NRT attribute changes without restart",
    "ngpoolname": "node groups selected by pool name",
    "nganns": "node group annotations",
    "metrics": "metrics endpoints exposed securely",
    "nrtcrdanns": "NRT CRD annotations",
    "netpols": "network policies of the operator and operands",
    "introspection": "operator and operand pod introspection",
    "mgselinuxcollect": "must-gather collects the SELinux policy",
    "tlscompliance": "operands follow the cluster TLS profile",
    "preemption": "NUMA-aware preemption by priority",
}

_TIER_TEXT = {
    "tier0": "critical: must always pass, runs on every change",
    "tier1": "important: core features and integrations",
    "tier2": "medium: extended use cases and edge scenarios",
    "tier3": "low: non-regression, slow or rare scenarios",
}

_FIXED: tuple[tuple[str, Kind, str], ...] = (
    (SUITE_LABEL, Kind.SUITE, "suite label of the serial suite, carried by every spec"),
    (
        EXTRA_LABEL,
        Kind.SUITE,
        "a spec of this project, not upstream's: it catches a seeded defect no upstream spec catches;"
        " not among upstream's 158, left out of the upstream comparison and the faithfulness ledger"
        " (`--label-filter '!extra'` runs upstream's specs alone)",
    ),
    *((tier, Kind.TIER, text) for tier, text in _TIER_TEXT.items()),
    ("slow", Kind.KIND, "requires a reboot or takes long"),
    ("release_critical", Kind.KIND, "critical for a release"),
    ("reboot_required", Kind.KIND, "reboots at least one node (machine config roll-outs)"),
    ("openshift", Kind.PLATFORM, "needs OpenShift-only APIs (MCO, KubeletConfig, PerformanceProfile...)"),
    ("hypershift", Kind.PLATFORM, "needs a HyperShift hosted cluster"),
    ("mno", Kind.CLUSTER_TYPE, "multi-node cluster with dedicated workers and unschedulable masters"),
    ("mno-masters-schedulable", Kind.CLUSTER_TYPE, "multi-node cluster with schedulable control plane"),
    ("compact", Kind.CLUSTER_TYPE, "three-node compact cluster (masters are workers)"),
    ("Serial", Kind.KIND, "Ginkgo's Serial decorator as reported: runs alone"),
    ("serial", Kind.KIND, "serial spec (lower-case spelling of the fundamentals file)"),
    ("disruptive", Kind.KIND, "changes cluster-wide state; must run in isolation"),
)

_SCENARIO: dict[str, str] = {
    "scheduler": "exercises the NUMA-aware secondary scheduler",
    "placement": "checks where a workload lands",
    "unsched": "expects a workload to stay unschedulable",
    "tmscope:cnt": "needs topology-manager scope container",
    "tmscope:container": "needs topology-manager scope container (alternate spelling)",
    "tmscope:pod": "needs topology-manager scope pod",
    "cache": "scheduler cache scenario",
    "periodic_update": "needs periodic NRT updates",
    "devices": "needs device resources (E2E_NROP_DEVICE_TYPE_1..3)",
    "hostlevel": "host-level resources",
    "rtetols": "RTE tolerations",
    "generic": "generic scheduler cache scenario",
    "stall": "scheduler cache stall scenario",
    "nodeAll": "saturates every worker node",
    "failalign": "expects an alignment failure",
    "resacct": "resource accounting",
    "fundamentals": "fundamental non-regression scenario",
    "hugepages": "uses hugepages",
    "job": "uses Jobs",
    "testtype4": "scheduler cache test type 4",
    "testtype11": "scheduler cache test type 11",
    "testtype29": "scheduler cache test type 29",
    "ngpoolname": "node groups selected by pool name",
    "podburst": "creates bursts of pods",
    "qos:gu": "uses Guaranteed QoS pods",
    "qos:bu": "uses Burstable QoS pods",
    "qos:be": "uses BestEffort QoS pods",
    "schedrst": "removes or restarts the scheduler",
    "cpu": "CPU is the discriminating resource",
    "memory": "memory is the discriminating resource",
    "restartPolicy": "checks pods with a specific restart policy",
    "no_nrt": "runs with NRT updates paused",
    "node1": "targets a single node",
    "byres": "placement by specific resource requests",
    "hugepages1Gi": "uses 1Gi hugepages",
    "hugepages2Mi": "uses 2Mi hugepages",
    "nonreg": "non-regression scenario",
    "ressched": "resource-aware scheduling scenario",
    "terminationMessage": "checks terminationMessagePolicy",
    "daemonset": "uses a DaemonSet",
    "default-scheduler": "involves the default scheduler",
    "deployment": "uses a Deployment",
    "images": "changes operand images",
    "pod": "uses bare pods",
    "related_objects": "checks status.relatedObjects",
    "versioncheck": "checks version information",
}


def _build() -> dict[str, Label]:
    entries = [Label(name, kind, text) for name, kind, text in _FIXED]
    entries += [Label(f"feature:{topic}", Kind.FEATURE, text) for topic, text in FEATURE_TOPICS.items()]
    entries += [Label(name, Kind.SCENARIO, text) for name, text in _SCENARIO.items()]
    return {label.name: label for label in entries}


LABELS: dict[str, Label] = _build()


def marker_name(label: str) -> str:
    """The pytest marker of a label: ``:`` → ``__``, ``-`` → ``_``."""
    return label.replace(":", "__").replace("-", "_")


_BY_MARKER: dict[str, str] = {label.marker: name for name, label in LABELS.items()}


def label_for_marker(marker: str) -> str | None:
    """The registered label whose marker is ``marker``, if any."""
    return _BY_MARKER.get(marker)


def validate(labels: tuple[str, ...] | list[str]) -> None:
    """Raise :class:`UnknownLabelError` naming every label that is not registered."""
    unknown = [label for label in labels if label not in LABELS]
    if unknown:
        raise UnknownLabelError(
            f"unknown spec label(s) {', '.join(map(repr, unknown))}: register them in nrop.suite.plugin.labels "
            f"(known: {', '.join(sorted(LABELS))})"
        )


def tier_labels_up_to(tier: int) -> tuple[str, ...]:
    """``tier0 … tierN`` (what upstream's ``--tier-up-to N`` selects)."""
    if not 0 <= tier < len(TIERS):
        raise ValueError(f"tier must be between 0 and {len(TIERS) - 1}, got {tier}")
    return TIERS[: tier + 1]


# The identifiers of pytest's -m grammar (pytest.mark.expression); the rest is operators.
_MARK_IDENT = re.compile(r"(?:\w|:|\+|-|\.|\[|\]|\\|/)+")


def rewrite_mark_expression(expression: str) -> str:
    """Rewrite upstream label spellings in a ``-m`` expression into marker names.

    ``-m "feature:tmpol and not tmscope:cnt"`` → ``feature__tmpol and not tmscope__cnt``;
    identifiers that are not registered labels (keywords, other markers) are left alone.
    """

    def replace(match: re.Match[str]) -> str:
        word = match.group(0)
        return LABELS[word].marker if word in LABELS else word

    return _MARK_IDENT.sub(replace, expression)
