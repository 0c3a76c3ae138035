"""The numaplacement codec against upstream's own vectors (k8stopologyawareschedwg/numaplacement v0.1.0)."""

from __future__ import annotations

import pytest

from nrop.api import numaplacement as np
from nrop.api.numaplacement import ContainerAffinity, ContainerID, NumaPlacementError, Payload, Reason

LEB89 = np.VECTOR_ENCODING_LEB89


def cid(ns: str, pod: str, cnt: str) -> ContainerID:
    return ContainerID(ns, pod, cnt)


def aff(ns: str, pod: str, cnt: str, numa: int) -> ContainerAffinity:
    return ContainerAffinity(cid(ns, pod, cnt), numa)


# ----------------------------------------------------------------------------- LEB89


@pytest.mark.parametrize(
    "value,chars",
    [
        pytest.param(0, 1, id="zero"),
        pytest.param(1, 1, id="one"),
        pytest.param(32, 1, id="mid_terminal"),
        pytest.param(63, 1, id="max_terminal"),
        pytest.param(64, 2, id="min_two_char"),
        pytest.param(800, 2, id="mid_two_char"),
        pytest.param(1663, 2, id="max_two_char"),
        pytest.param(1664, 3, id="min_three_char"),
        pytest.param(2047, 3, id="offset_2047"),
        pytest.param(40063, 3, id="max_three_char"),
        pytest.param(40064, 4, id="min_four_char"),
        pytest.param(100000, 4, id="large_four_char"),
        pytest.param(1000063, 4, id="four_char_upper"),
    ],
)
def test_leb89_lengths_and_roundtrip(value: int, chars: int) -> None:
    encoded = np.encode_value(value)
    assert len(encoded) == chars
    assert np.decode_value(encoded, 0) == (value, len(encoded))


def test_leb89_alphabet_is_the_89_json_safe_characters() -> None:
    alphabet = "".join(np.encode_value(v) for v in range(64)) + "".join(
        np.encode_value(64 + 64 * d)[0] for d in range(25)
    )
    assert len(set(alphabet)) == 89
    assert not set(alphabet) & set('"&<>\\ ')
    assert alphabet[:64] == "".join(c for c in map(chr, range(0x21, ord("e") + 1)) if c not in '"&<>\\')
    assert all("f" <= c <= "~" for c in alphabet[64:])


def test_leb89_roundtrip_range() -> None:
    for value in range(0, 50000, 7):
        encoded = np.encode_value(value)
        assert np.decode_value(encoded) == (value, len(encoded))


@pytest.mark.parametrize(
    "text,pos,expected",
    [
        pytest.param("", 0, (-1, 0), id="empty"),
        pytest.param(np.encode_value(42) + np.encode_value(99), 1, (99, 3), id="mid-string"),
        pytest.param("f", 0, (-1, 1), id="truncated continuation"),
        pytest.param(" ", 0, (-1, 1), id="unmapped character"),
    ],
)
def test_leb89_decode_edges(text: str, pos: int, expected: tuple[int, int]) -> None:
    assert np.decode_value(text, pos) == expected


def test_leb89_rejects_negative() -> None:
    with pytest.raises(ValueError):
        np.encode_value(-1)


# ----------------------------------------------------------------------------- vectors


@pytest.mark.parametrize(
    "offsets,encoded",
    [
        pytest.param([], "", id="empty"),
        pytest.param([1], "#", id="one element"),
        pytest.param([1, 3, 7, 42], "#$'H", id="small vector"),
        pytest.param([0, 4, 8, 10], "!''$", id="small vector at offset 0"),
        pytest.param([100, 108, 116], "fI++", id="2-char first entry"),
        pytest.param([2000, 2008], "gk3+", id="3-char first entry"),
    ],
)
def test_per_numa_vector_known_strings(offsets: list[int], encoded: str) -> None:
    assert np.encode_vector(offsets) == encoded
    assert np.decode_vector(encoded) == offsets


@pytest.mark.parametrize(
    "offsets",
    [pytest.param([1, 1 << 10], id="practical limit"), pytest.param(list(range(1 << 10)), id="dense")],
)
def test_per_numa_vector_roundtrip(offsets: list[int]) -> None:
    assert np.decode_vector(np.encode_vector(offsets)) == offsets


# ----------------------------------------------------------------------------- hashes


@pytest.mark.parametrize(
    "container,expected",
    [
        pytest.param(cid("", "", ""), 11145182160106660097, id="empty"),
        pytest.param(cid("ns", "pod", "cnt"), 9468815510407277218, id="filled"),
    ],
)
def test_container_hash(container: ContainerID, expected: int) -> None:
    assert container.hash() == expected


def test_container_id_string() -> None:
    assert str(cid("ns", "pod", "cnt")) == "ns/pod/cnt"
    assert str(cid("", "", "")) == "//"


# ----------------------------------------------------------------------------- metadata


@pytest.mark.parametrize(
    "payload,expected",
    [
        pytest.param(Payload(0, 0, 0), "npv0v001::ve=leb89::cc=0::nn=0::bn=0", id="zeros"),
        pytest.param(Payload(4, 2, 1), "npv0v001::ve=leb89::cc=4::nn=2::bn=1", id="typical"),
        pytest.param(Payload(-1, -1, -1), "npv0v001::ve=leb89::cc=-1::nn=-1::bn=-1", id="negative"),
        pytest.param(Payload(4, 2, 1, "plain"), "npv0v001::ve=plain::cc=4::nn=2::bn=1", id="plain"),
    ],
)
def test_pack_metadata(payload: Payload, expected: str) -> None:
    assert payload.pack_metadata() == expected
    back = np.unpack_metadata(expected)
    assert (back.containers, back.numa_nodes, back.busiest_node, back.vector_encoding) == (
        payload.containers,
        payload.numa_nodes,
        payload.busiest_node,
        payload.vector_encoding,
    )


def test_unpack_metadata_partial_leaves_unknowns() -> None:
    got = np.unpack_metadata("npv0v001::nn=8::bn=3")
    assert (got.vector_encoding, got.containers, got.numa_nodes, got.busiest_node) == ("", -1, 8, 3)


@pytest.mark.parametrize(
    "metadata,reason",
    [
        pytest.param("", Reason.MALFORMED_METADATA, id="empty string"),
        pytest.param("XXXXv001::cc=1::nn=2::bn=0", Reason.MALFORMED_METADATA, id="wrong prefix"),
        pytest.param("npv0v999::cc=1::nn=2::bn=0", Reason.MALFORMED_METADATA, id="wrong version"),
        pytest.param("npv0v001cc=1::nn=2::bn=0", Reason.MALFORMED_METADATA, id="missing separator"),
        pytest.param("npv0v001::cc=1::nn=2::xx=0", Reason.UNKNOWN_METADATA, id="unknown field"),
        pytest.param("npv0v001::cc=abc::nn=2::bn=0", Reason.INVALID_METADATA_VALUE, id="non-numeric value"),
        pytest.param("npv0v001::cc1::nn=2::bn=0", Reason.MALFORMED_METADATA_PAIR, id="missing equals"),
        pytest.param("npv0v001::cc=::nn=2::bn=0", Reason.MISSING_METADATA_VALUE, id="missing value"),
        pytest.param("npv0v001::nn=2::bn=0::=5", Reason.MISSING_METADATA_KEY, id="missing key"),
    ],
)
def test_unpack_metadata_errors(metadata: str, reason: Reason) -> None:
    with pytest.raises(NumaPlacementError) as err:
        np.unpack_metadata(metadata)
    assert err.value.reason is reason


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "payload,reason",
    [
        pytest.param(Payload(0, 0, 0), Reason.INCONSISTENT_BUSIEST_NODE, id="empty"),
        pytest.param(Payload(0, 0, 0, "other"), Reason.UNSUPPORTED_VECTOR_ENCODING, id="other encoding"),
        pytest.param(Payload(0, 2, 0, ""), Reason.UNSUPPORTED_VECTOR_ENCODING, id="empty encoding"),
        pytest.param(Payload(0, 1, 0), None, id="zero containers"),
        pytest.param(Payload(-1, 1, 0), Reason.INCONSISTENT_CONTAINER_SET, id="negative containers"),
        pytest.param(Payload(1, 1, -1), Reason.UNKNOWN_BUSIEST_NODE, id="unknown busiest node"),
        pytest.param(Payload(1, 8, 8), Reason.INCONSISTENT_BUSIEST_NODE, id="oob busiest node"),
        pytest.param(
            Payload(0, 2, 0, vectors={1: "#$'H"}),
            Reason.INCONSISTENT_NUMA_VECTORS,
            id="vectors without containers",
        ),
        pytest.param(
            Payload(8, 1, 0, vectors={0: "!#", 1: "$%"}),
            Reason.INCONSISTENT_NUMA_VECTORS,
            id="too many vectors",
        ),
        pytest.param(
            Payload(8, 2, 0, vectors={2: "!#"}), Reason.CORRUPTED_NUMA_VECTOR, id="vector key too high"
        ),
        pytest.param(Payload(8, 2, 0, vectors={-1: "!#"}), Reason.CORRUPTED_NUMA_VECTOR, id="negative key"),
        pytest.param(
            Payload(8, 2, 1, vectors={1: "$%'()*"}), Reason.CORRUPTED_NUMA_VECTOR, id="busiest vector"
        ),
        pytest.param(Payload(8, 2, 1, vectors={0: ""}), None, id="empty vector is valid"),
        pytest.param(Payload(4, 2, 0, vectors={1: "!#"}), None, id="typical"),
        pytest.param(Payload(8, 4, 0, vectors={1: "!#", 2: "$%", 3: "'("}), None, id="multiple vectors"),
        pytest.param(Payload(5, 1, 0), None, id="single NUMA"),
        pytest.param(Payload(1, 0, 0), Reason.INCONSISTENT_BUSIEST_NODE, id="zero NUMA nodes"),
    ],
)
def test_validate(payload: Payload, reason: Reason | None) -> None:
    if reason is None:
        np.validate(payload)
        return
    with pytest.raises(NumaPlacementError) as err:
        np.validate(payload)
    assert err.value.reason is reason


# ----------------------------------------------------------------------------- encoder


@pytest.mark.parametrize(
    "numa_nodes,affinities,expected",
    [
        pytest.param(2, [], Payload(0, 2, 0), id="empty"),
        pytest.param(
            1,
            [aff("ns1", "pod1", "cnt1", 0), aff("ns1", "pod2", "cnt1", 0), aff("ns1", "pod3", "cnt1", 0)],
            Payload(3, 1, 0),
            id="single NUMA node",
        ),
        pytest.param(
            2,
            [aff("ns1", "pod1", "cnt1", 0), aff("ns1", "pod2", "cnt1", 0), aff("ns1", "pod2", "cnt1", 0)],
            Payload(2, 2, 0),
            id="duplicate container",
        ),
        pytest.param(
            2,
            [
                aff("ns1", "pod1", "cnt1", 0),
                aff("ns1", "pod2", "cnt1", 0),
                aff("ns1", "pod3", "cnt1", 0),
                aff("ns2", "pod1", "cnt1", 1),
            ],
            Payload(4, 2, 0, vectors={1: "#"}),
            id="uneven split",
        ),
        pytest.param(
            2,
            [
                aff("ns1", "pod1", "cnt1", 0),
                aff("ns1", "pod2", "cnt1", 0),
                aff("ns2", "pod1", "cnt1", 1),
                aff("ns2", "pod2", "cnt1", 1),
            ],
            Payload(4, 2, 0, vectors={1: "!%"}),
            id="even split lowest NUMA wins",
        ),
        pytest.param(
            2,
            [
                aff("ns1", "pod1", "cnt1", 0),
                aff("ns2", "pod1", "cnt1", 1),
                aff("ns2", "pod2", "cnt1", 1),
                aff("ns2", "pod3", "cnt1", 1),
            ],
            Payload(4, 2, 1, vectors={0: "$"}),
            id="busiest is not NUMA 0",
        ),
        pytest.param(
            4,
            [
                aff("ns1", "pod1", "cnt1", 0),
                aff("ns1", "pod2", "cnt1", 0),
                aff("ns1", "pod3", "cnt1", 0),
                aff("ns2", "pod4", "cnt1", 1),
                aff("ns3", "pod5", "cnt1", 2),
            ],
            Payload(5, 4, 0, vectors={1: "!", 2: "'"}),
            id="3-way split across 4 NUMA nodes",
        ),
    ],
)
def test_encode(numa_nodes: int, affinities: list[ContainerAffinity], expected: Payload) -> None:
    assert np.encode(numa_nodes, affinities) == expected


@pytest.mark.parametrize(
    "numa_nodes,numa,reason",
    [
        pytest.param(0, 0, Reason.INCONSISTENT_NUMA_NODES, id="zero NUMA nodes"),
        pytest.param(1, -1, Reason.UNSUPPORTED_UNKNOWN_NUMA_AFFINITY, id="unknown affinity"),
        pytest.param(1, -3, Reason.WRONG_NUMA_AFFINITY, id="negative affinity"),
        pytest.param(4, 15, Reason.WRONG_NUMA_AFFINITY, id="out of range affinity"),
    ],
)
def test_encode_errors(numa_nodes: int, numa: int, reason: Reason) -> None:
    with pytest.raises(NumaPlacementError) as err:
        np.encode(numa_nodes, [aff("ns1", "pod1", "cnt1", numa)])
    assert err.value.reason is reason


# ----------------------------------------------------------------------------- decoder

MIXED = [
    aff("ns-a", "pod-1", "app", 0),
    aff("ns-a", "pod-1", "sidecar", 3),
    aff("ns-b", "pod-2", "worker", 7),
    aff("ns-b", "pod-2", "other", 7),
    aff("ns-c", "pod-3", "x", 2),
]


def test_encode_decode_roundtrip() -> None:
    payload = np.encode(8, MIXED)
    wire = np.unpack_metadata(payload.pack_metadata())
    wire.vectors = dict(payload.vectors)
    info = np.decode(wire, [a.id for a in reversed(MIXED)])
    assert info.containers == len(MIXED)
    for a in MIXED:
        assert info.numa_affinity(a.id) == a.numa_node
    with pytest.raises(NumaPlacementError) as err:
        info.numa_affinity(cid("ns-a", "pod-1", "nope"))
    assert err.value.reason is Reason.UNKNOWN_CONTAINER


def test_decode_empty_payload() -> None:
    assert np.decode(Payload(0, 1, 0), []).containers == 0


@pytest.mark.parametrize(
    "payload,containers,reason",
    [
        pytest.param(
            Payload(0, 1, 0), [cid("ns1", "pod1", "cnt1")], Reason.INCONSISTENT_CONTAINER_SET, id="excess"
        ),
        pytest.param(
            Payload(2, 2, 0, vectors={1: "!"}), [], Reason.INCONSISTENT_CONTAINER_SET, id="excess payload"
        ),
        pytest.param(
            Payload(1, 2, 0, vectors={1: "$"}),
            [cid("ns1", "pod1", "cnt1")],
            Reason.CORRUPTED_NUMA_VECTOR,
            id="offset outside the set",
        ),
        pytest.param(
            Payload(1, 2, 0, vectors={1: " "}),
            [cid("ns1", "pod1", "cnt1")],
            Reason.CORRUPTED_NUMA_VECTOR,
            id="negative offset",
        ),
        pytest.param(
            Payload(5, 2, 0, vectors={1: "#!"}),
            [cid("ns1", f"pod{i}", "cnt1") for i in range(5)],
            Reason.DUPLICATED_NUMA_VECTOR,
            id="duplicate offset same vector",
        ),
        pytest.param(
            Payload(5, 4, 0, vectors={1: "#", 2: "#", 3: "%"}),
            [cid(f"ns{i}", "pod1", "cnt1") for i in range(5)],
            Reason.DUPLICATED_NUMA_VECTOR,
            id="duplicate offset different vectors",
        ),
    ],
)
def test_decode_errors(payload: Payload, containers: list[ContainerID], reason: Reason) -> None:
    with pytest.raises(NumaPlacementError) as err:
        np.decode(payload, containers)
    assert err.value.reason is reason
