"""The label registry, marker names, ``-m`` rewriting, and how spec levels combine."""

from __future__ import annotations

import re

import pytest

from nrop.suite.plugin import labels
from nrop.suite.plugin.specs import SPEC_MARK, entry, resolve, spec, test_id_of

# Every label the upstream serial suite uses (test/e2e/label/label.go and the specs' own labels).
UPSTREAM_SERIAL_LABELS = [
    "Serial",
    "byres",
    "cache",
    "compact",
    "cpu",
    "daemonset",
    "default-scheduler",
    "deployment",
    "devices",
    "disruptive",
    "e2e:serial",
    "failalign",
    "feature:byres",
    "feature:cache",
    "feature:config",
    "feature:hostlevel",
    "feature:introspection",
    "feature:metrics",
    "feature:netpols",
    "feature:ngpoolname",
    "feature:nodelabel",
    "feature:nonreg",
    "feature:nonrt",
    "feature:overhead",
    "feature:preemption",
    "feature:resacct",
    "feature:rtetols",
    "feature:schedattrwatch",
    "feature:schedrst",
    "feature:stall",
    "feature:taint",
    "feature:tlscompliance",
    "feature:tmpol",
    "feature:unsched",
    "feature:wlplacement",
    "fundamentals",
    "generic",
    "hostlevel",
    "hugepages",
    "hugepages1Gi",
    "hugepages2Mi",
    "hypershift",
    "images",
    "job",
    "memory",
    "mno",
    "mno-masters-schedulable",
    "ngpoolname",
    "no_nrt",
    "node1",
    "nodeAll",
    "nonreg",
    "openshift",
    "periodic_update",
    "placement",
    "pod",
    "podburst",
    "qos:be",
    "qos:bu",
    "qos:gu",
    "reboot_required",
    "related_objects",
    "release_critical",
    "resacct",
    "ressched",
    "restartPolicy",
    "rtetols",
    "schedrst",
    "scheduler",
    "serial",
    "slow",
    "stall",
    "terminationMessage",
    "testtype11",
    "testtype29",
    "testtype4",
    "tier0",
    "tier1",
    "tier2",
    "tier3",
    "tmscope:cnt",
    "tmscope:container",
    "tmscope:pod",
    "unsched",
    "versioncheck",
]


def test_every_upstream_label_is_registered_with_a_description() -> None:
    missing = [name for name in UPSTREAM_SERIAL_LABELS if name not in labels.LABELS]
    assert missing == []
    assert all(label.description for label in labels.LABELS.values())


def test_marker_names_are_unique_valid_identifiers_and_map_back() -> None:
    markers = [label.marker for label in labels.LABELS.values()]
    assert len(set(markers)) == len(markers)
    for name, label in labels.LABELS.items():
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", label.marker), label.marker
        assert labels.label_for_marker(label.marker) == name


@pytest.mark.parametrize(
    ("label", "marker"),
    [
        ("feature:tmpol", "feature__tmpol"),
        ("tmscope:cnt", "tmscope__cnt"),
        ("e2e:serial", "e2e__serial"),
        ("mno-masters-schedulable", "mno_masters_schedulable"),
        ("tier0", "tier0"),
        ("Serial", "Serial"),
    ],
)
def test_marker_name(label: str, marker: str) -> None:
    assert labels.marker_name(label) == marker


@pytest.mark.parametrize(
    ("expression", "rewritten"),
    [
        ("feature:tmpol", "feature__tmpol"),
        ("feature:tmpol and not tmscope:cnt", "feature__tmpol and not tmscope__cnt"),
        ("(tier0 or tier1) and not reboot_required", "(tier0 or tier1) and not reboot_required"),
        ("mno-masters-schedulable or compact", "mno_masters_schedulable or compact"),
        ("kubectl and not slow", "kubectl and not slow"),
        ("feature:unknown", "feature:unknown"),
        ("feature__tmpol", "feature__tmpol"),
    ],
)
def test_rewrite_mark_expression(expression: str, rewritten: str) -> None:
    assert labels.rewrite_mark_expression(expression) == rewritten


@pytest.mark.parametrize(("tier", "selected"), [(0, ("tier0",)), (2, ("tier0", "tier1", "tier2"))])
def test_tier_labels_up_to(tier: int, selected: tuple[str, ...]) -> None:
    assert labels.tier_labels_up_to(tier) == selected


def test_unknown_labels_are_named() -> None:
    with pytest.raises(labels.UnknownLabelError, match="unknown spec label\\(s\\) 'nodelabel', 'Tier0'"):
        spec("x", "tier0", "nodelabel", "Tier0")


def test_resolve_joins_texts_and_unions_labels_outermost_first() -> None:
    info = resolve(
        [
            ("[serial][disruptive] numaresources workload placement", ("Serial", "feature:wlplacement")),
            ("", ()),
            ("[test_id:80823] should not allow duplicate PoolName", ("hypershift",)),
            ("duplicate pool name", ("feature:wlplacement", "tier2")),
        ]
    )
    assert info.full_text == (
        "[serial][disruptive] numaresources workload placement [test_id:80823] should not allow duplicate "
        "PoolName duplicate pool name"
    )
    assert info.labels == ("e2e:serial", "Serial", "feature:wlplacement", "hypershift", "tier2")
    assert info.test_id == "80823"
    assert info.tier == "tier2"
    assert info.listing().endswith("[e2e:serial, Serial, feature:wlplacement, hypershift, tier2]")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("[test_id:47575] x", "47575"), ("no id", None), ("[test_id:1] outer [test_id:2] inner", "2")],
)
def test_test_id_of(text: str, expected: str | None) -> None:
    assert test_id_of(text) == expected


def test_entry_is_a_param_with_the_spec_mark_and_the_test_id_as_id() -> None:
    param = entry("[test_id:47575] two containers", "single-numa-node", {"cpu": "2"}, labels=("tier0",))
    assert param.values == ("single-numa-node", {"cpu": "2"})
    assert param.id == "47575"
    (mark,) = param.marks
    assert (mark.name, mark.args) == (SPEC_MARK, ("[test_id:47575] two containers", "tier0"))
    assert entry("with restricted", 1).id == "with restricted"
