"""Pod fingerprints against vectors from k8stopologyawareschedwg/podfingerprint
(testdata/compat-*.sign and tracing_test.go), plus the set properties."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrop.api import fingerprint
from nrop.api.fingerprint import (
    Fingerprint,
    IncompatibleVersionError,
    MalformedError,
    Method,
    NamespacedName,
    SignatureMismatchError,
    Status,
    compute,
    is_version_compatible,
    normalize_method,
)

TINY = [("production", "jaeger-dpgjk"), ("production", "nginx-rt684"), ("production", "envoy-g9m22")]
SMALL = [
    ("analytics", "controller-69dkj"),
    ("kube-public", "subscriber-tq6v7"),
    ("kube-public", "transformer-hfbng"),
    ("kube-public", "validator-c6pn5"),
    ("kube-system", "proxy-wszrd"),
    ("middleware", "processor-jkrl4"),
    ("network", "gateway-vsll5"),
    ("network", "importer-kzdfr"),
    ("network", "importer-q5vt9"),
    ("staging", "prometheus-bwgbn"),
]
TRACED = [("ns1", "n1"), ("ns1", "n2"), ("ns2", "n1"), ("ns3", "n1"), ("ns3", "n2")]


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param(TINY, "pfp0v001607b76a0e9d3aeb4", id="compat-tiny-3pods-1ns"),
        pytest.param(SMALL, "pfp0v001567144e4a561bb5a", id="compat-small-10pods-3ns"),
        pytest.param(TRACED, "pfp0v001b92008c14168b3a6", id="tracing-test-5pods"),
        pytest.param([], "pfp0v001ef46db3751d8e999", id="empty-set"),
    ],
)
def test_upstream_vectors(pods: list[tuple[str, str]], expected: str) -> None:
    assert compute(pods) == expected
    assert compute(reversed(pods)) == expected
    fingerprint.check(pods, expected)


def test_constants() -> None:
    assert fingerprint.PREFIX + fingerprint.VERSION == "pfp0v001"
    assert fingerprint.ATTRIBUTE == "nodeTopologyPodsFingerprint"
    assert fingerprint.ATTRIBUTE_METHOD == "nodeTopologyPodsFingerprintMethod"
    assert fingerprint.ANNOTATION == "topology.node.k8s.io/fingerprint"
    assert Method.ALL == "all"
    assert Method.WITH_EXCLUSIVE_RESOURCES == "with-exclusive-resources"
    assert fingerprint.DEFAULT_METHOD is Method.WITH_EXCLUSIVE_RESOURCES


@pytest.mark.parametrize(
    ("signature", "error"),
    [
        pytest.param("x", MalformedError, id="too-short"),
        pytest.param("wrngv001e477a4e3b2fc0ec6", MalformedError, id="wrong-prefix"),
        pytest.param("pfp0vX", MalformedError, id="malformed-version"),
        pytest.param("pfp0v000e477a4e3b2fc0ec6", IncompatibleVersionError, id="incompatible-version"),
        pytest.param("pfp0v001e477abb123fc0ec1", SignatureMismatchError, id="wrong-fingerprint"),
    ],
)
def test_check_errors(signature: str, error: type[Exception]) -> None:
    fp = Fingerprint()
    fp.add_all(SMALL)
    with pytest.raises(error):
        fp.check(signature)
    assert not fp.matches(signature)


def test_mismatch_message_names_both_sides() -> None:
    fp = Fingerprint()
    fp.add_all(TINY)
    with pytest.raises(SignatureMismatchError) as caught:
        fp.check("pfp0v0010000000000000000")
    assert str(caught.value) == 'fingerprint mismatch got="607b76a0e9d3aeb4" expected="0000000000000000"'


@pytest.mark.parametrize(
    ("version", "compatible"),
    [("xxxx", False), ("v001", True)],
)
def test_version_compatibility(version: str, compatible: bool) -> None:
    assert is_version_compatible(version) is compatible


@pytest.mark.parametrize("version", ["", "a", "bbbbbbbb"])
def test_malformed_versions(version: str) -> None:
    with pytest.raises(MalformedError):
        is_version_compatible(version)


def test_tracing_status_matches_upstream_json_and_repr() -> None:
    status = Status(node_name="test-node")
    fp = Fingerprint(tracer=status)
    fp.add_all(TRACED)
    fp.sign()
    fp.check("pfp0v001b92008c14168b3a6")
    assert status.render() == (
        '> processing node "test-node"\n'
        "> processing 5 pods\n"
        "+ ns1/n1\n+ ns1/n2\n+ ns2/n1\n+ ns3/n1\n+ ns3/n2\n"
        "= pfp0v001b92008c14168b3a6\n"
        "V pfp0v001b92008c14168b3a6\n"
    )
    status.node_name = ""
    assert status.to_json() == (
        '{"fingerprintExpected":"pfp0v001b92008c14168b3a6","fingerprintComputed":"pfp0v001b92008c14168b3a6",'
        '"pods":[{"Namespace":"ns1","Name":"n1"},{"Namespace":"ns1","Name":"n2"},{"Namespace":"ns2","Name":"n1"},'
        '{"Namespace":"ns3","Name":"n1"},{"Namespace":"ns3","Name":"n2"}]}'
    )
    clone = status.clone()
    clone.pods.append(NamespacedName("x", "y"))
    assert len(status.pods) == 5
    assert json.loads(Status().to_json()) == {}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("all", Method.ALL), ("With-Exclusive-Resources", Method.WITH_EXCLUSIVE_RESOURCES)],
)
def test_normalize_method(value: str, expected: Method) -> None:
    assert normalize_method(value) is expected


def test_normalize_method_rejects_methods_the_exporter_does_not_know() -> None:
    with pytest.raises(ValueError, match="exclude-terminal"):
        normalize_method("exclude-terminal")
    assert normalize_method("exclude-terminal", allowed=Method) is Method.EXCLUDE_TERMINAL


_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
_pods = st.lists(st.tuples(_names, _names), max_size=30, unique=True)


@given(_pods, st.randoms())
def test_order_does_not_matter(pods: list[tuple[str, str]], rng: random.Random) -> None:
    shuffled = list(pods)
    rng.shuffle(shuffled)
    assert compute(pods) == compute(shuffled)


@given(_pods, st.tuples(_names, _names))
def test_adding_or_removing_a_pod_changes_the_signature(
    pods: list[tuple[str, str]], extra: tuple[str, str]
) -> None:
    if extra in pods:
        return
    before = compute(pods)
    assert compute([*pods, extra]) != before
    if pods:
        assert compute(pods[1:]) != before


def test_namespace_is_a_seed_not_a_prefix() -> None:
    assert compute([("ab", "c")]) != compute([("a", "bc")])
    signature = compute([("default", "pod")])
    assert len(signature) == 24
    assert signature == signature.lower()
