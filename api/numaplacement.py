"""The numaplacement encoding: which NUMA node each container with exclusive resources sits on.

This module owns the wire format that the resource-topology exporter publishes in NRT
objects and that the scheduler decodes to simulate evictions during preemption. It is
wire-compatible with github.com/k8stopologyawareschedwg/numaplacement v0.1.0:

* a container is identified by ``XXH64(namespace + "\\0" + pod + "\\0" + container)``
  (seed 0); producer and consumer both sort the hashes of the same container set as
  unsigned 64-bit integers, and a container is named by its offset in that list;
* the top-level attribute ``topology.node.k8s.io/numaplacement-metadata`` is
  ``npv0v001::ve=leb89::cc=<containers>::nn=<NUMA nodes>::bn=<busiest node>``;
* each NUMA zone except the busiest one (the node holding most containers, the lowest
  id on ties) carries ``topology.node.k8s.io/numaplacement-vector``: the ascending
  offsets of its containers, the first as is and the others as deltas from the previous
  one, each written in LEB89. Containers absent from every vector are on the busiest node.
* LEB89 writes a non-negative integer with the 89 printable ASCII characters JSON does
  not escape (``!``..``~`` minus ``" & < > \\``): zero or more continuation digits
  (base 25, characters 64..88 of the alphabet) then one terminal digit (base 64,
  characters 0..63); values 0..63 take one character, 64..1663 two, 1664..40063 three.

The decoder needs the same container set the encoder saw (the scheduler rebuilds it
from the pods it knows); a mismatch in count, or a vector pointing outside the set or
twice at one container, is an error. Errors carry upstream's messages
(:class:`Reason`).
"""

from __future__ import annotations

import enum
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import xxhash

from nrop.api.nrt import ATTR_NUMAPLACEMENT_METADATA, ATTR_NUMAPLACEMENT_VECTOR

__all__ = [
    "ATTRIBUTE_METADATA",
    "ATTRIBUTE_VECTOR",
    "PREFIX",
    "UNKNOWN",
    "VECTOR_ENCODING_LEB89",
    "VERSION",
    "ContainerAffinity",
    "ContainerID",
    "NumaPlacementError",
    "Payload",
    "PlacementInfo",
    "Reason",
    "decode",
    "decode_value",
    "decode_vector",
    "encode",
    "encode_value",
    "encode_vector",
    "unpack_metadata",
]

ATTRIBUTE_METADATA: Final = ATTR_NUMAPLACEMENT_METADATA
ATTRIBUTE_VECTOR: Final = ATTR_NUMAPLACEMENT_VECTOR
PREFIX: Final = "npv0"
VERSION: Final = "v001"
UNKNOWN: Final = -1
"""The unset value of the integer metadata fields, and the "no NUMA affinity" placement."""
VECTOR_ENCODING_LEB89: Final = "leb89"

_SEPARATOR: Final = "::"
_INTEGER = re.compile(r"[+-]?[0-9]+")  # what Go's strconv.Atoi accepts


class Reason(enum.StrEnum):
    """Upstream's error values; the text is theirs."""

    MALFORMED_METADATA = "malformed metadata"
    UNKNOWN_METADATA = "unknown metadata field"
    MALFORMED_METADATA_PAIR = "malformed metadata pair"
    MISSING_METADATA_KEY = "missing metadata key"
    MISSING_METADATA_VALUE = "missing metadata value"
    INVALID_METADATA_VALUE = "invalid metadata value"
    INCONSISTENT_CONTAINER_SET = "inconsistent container set"
    INCONSISTENT_BUSIEST_NODE = "inconsistent busiest node data"
    UNKNOWN_BUSIEST_NODE = "unknown busiest node"
    INCONSISTENT_NUMA_NODES = "inconsistent NUMA node count"
    INCONSISTENT_NUMA_VECTORS = "inconsistent NUMA vector data"
    CORRUPTED_NUMA_VECTOR = "corrupted NUMA vector"
    DUPLICATED_NUMA_VECTOR = "duplicated data in multiple NUMA vectors"
    UNKNOWN_CONTAINER = "unknown container"
    WRONG_NUMA_AFFINITY = "wrong NUMA affinity"
    UNSUPPORTED_UNKNOWN_NUMA_AFFINITY = "unknown NUMA affinity not supported"
    UNSUPPORTED_VECTOR_ENCODING = "unsupported vector encoding"


class NumaPlacementError(ValueError):
    """An encoding or decoding failure; ``reason`` says which, the message may add context."""

    def __init__(self, reason: Reason, context: str = "") -> None:
        super().__init__(f"{context}: {reason.value}" if context else reason.value)
        self.reason = reason


# ----------------------------------------------------------------------------- LEB89

_ALPHABET: Final = bytes(b for b in range(0x21, 0x7F) if b not in b'"&<>\\').decode()
_INDEX: Final = {ch: i for i, ch in enumerate(_ALPHABET)}
_TERMINALS: Final = 64
_CONTINUATIONS: Final = len(_ALPHABET) - _TERMINALS  # 25


def encode_value(value: int) -> str:
    """One non-negative integer in LEB89."""
    if value < 0:
        raise ValueError(f"LEB89 encodes non-negative integers, got {value}")
    if value < _TERMINALS:
        return _ALPHABET[value]
    value -= _TERMINALS
    terminal = value % _TERMINALS
    value //= _TERMINALS
    digits: list[str] = []
    while True:
        digits.append(_ALPHABET[_TERMINALS + value % _CONTINUATIONS])
        value //= _CONTINUATIONS
        if value == 0:
            break
    return "".join(reversed(digits)) + _ALPHABET[terminal]


def decode_value(text: str, pos: int = 0) -> tuple[int, int]:
    """The value starting at ``text[pos]`` and the position after it; ``(-1, len)`` if truncated.

    As upstream, a character outside the alphabet reads as digit -1 of a terminal, so
    corrupted input yields a wrong (possibly negative) value rather than an error; the
    decoder rejects what falls outside the container list.
    """
    continued = 0
    count = 0
    while pos < len(text):
        index = _INDEX.get(text[pos], UNKNOWN)
        pos += 1
        if index < _TERMINALS:
            if count == 0:
                return index, pos
            return _TERMINALS + continued * _TERMINALS + index, pos
        continued = continued * _CONTINUATIONS + (index - _TERMINALS)
        count += 1
    return UNKNOWN, pos


def encode_vector(sorted_offsets: Sequence[int]) -> str:
    """Ascending offsets as LEB89: the first as is, then the gaps."""
    if not sorted_offsets:
        return ""
    parts = [encode_value(sorted_offsets[0])]
    parts.extend(encode_value(cur - prev) for prev, cur in itertools.pairwise(sorted_offsets))
    return "".join(parts)


def decode_vector(text: str) -> list[int]:
    """The offsets of :func:`encode_vector`'s output."""
    out: list[int] = []
    pos = 0
    while pos < len(text):
        value, pos = decode_value(text, pos)
        out.append(value if not out else out[-1] + value)
    return out


# ----------------------------------------------------------------------------- identities


@dataclass(frozen=True, slots=True)
class ContainerID:
    namespace: str
    pod_name: str
    container_name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.pod_name}/{self.container_name}"

    def hash(self) -> int:
        """The container's canonical XXH64 (unsigned)."""
        key = f"{self.namespace}\0{self.pod_name}\0{self.container_name}"
        return xxhash.xxh64_intdigest(key.encode())


@dataclass(frozen=True, slots=True)
class ContainerAffinity:
    id: ContainerID
    numa_node: int


# ----------------------------------------------------------------------------- payload


@dataclass(slots=True)
class Payload:
    """The encoded data: the metadata fields and the per-NUMA vectors (busiest node omitted)."""

    containers: int
    numa_nodes: int
    busiest_node: int
    vector_encoding: str = VECTOR_ENCODING_LEB89
    vectors: dict[int, str] = field(default_factory=dict)

    def pack_metadata(self) -> str:
        """The metadata attribute value, fields in upstream's order."""
        fields = (
            f"ve={self.vector_encoding}",
            f"cc={self.containers}",
            f"nn={self.numa_nodes}",
            f"bn={self.busiest_node}",
        )
        return PREFIX + VERSION + _SEPARATOR + _SEPARATOR.join(fields)


_INT_FIELDS: Final = {"cc": "containers", "nn": "numa_nodes", "bn": "busiest_node"}


def unpack_metadata(metadata: str) -> Payload:
    """The metadata fields of a metadata attribute value (no vectors); unset fields stay -1 / ``""``."""
    head = PREFIX + VERSION + _SEPARATOR
    if not metadata.startswith(head):
        raise NumaPlacementError(Reason.MALFORMED_METADATA)
    payload = Payload(UNKNOWN, UNKNOWN, UNKNOWN, vector_encoding="")
    for raw in metadata[len(head) :].split(_SEPARATOR):
        _set_field(payload, raw)
    return payload


def _set_field(payload: Payload, raw: str) -> None:
    context = f"error while setting {raw!r}"
    idx = raw.find("=")
    if idx == -1:
        raise NumaPlacementError(Reason.MALFORMED_METADATA_PAIR, context)
    if idx == 0:
        raise NumaPlacementError(Reason.MISSING_METADATA_KEY, context)
    if idx >= len(raw) - 1:
        raise NumaPlacementError(Reason.MISSING_METADATA_VALUE, context)
    key, value = raw[:idx], raw[idx + 1 :]
    if key == "ve":
        payload.vector_encoding = value
        return
    if not _INTEGER.fullmatch(value):
        raise NumaPlacementError(Reason.INVALID_METADATA_VALUE, f"{context}: error while parsing {raw!r}")
    attr = _INT_FIELDS.get(key)
    if attr is None:
        raise NumaPlacementError(Reason.UNKNOWN_METADATA, context)
    setattr(payload, attr, int(value))


def _validate_leb89(payload: Payload) -> None:
    if payload.vector_encoding != VECTOR_ENCODING_LEB89:
        raise NumaPlacementError(Reason.UNSUPPORTED_VECTOR_ENCODING)
    if payload.busiest_node == UNKNOWN:
        raise NumaPlacementError(Reason.UNKNOWN_BUSIEST_NODE)
    if not 0 <= payload.busiest_node < payload.numa_nodes:
        raise NumaPlacementError(Reason.INCONSISTENT_BUSIEST_NODE)
    # The busiest node is never written, so there are fewer vectors than NUMA nodes.
    if len(payload.vectors) >= payload.numa_nodes:
        raise NumaPlacementError(Reason.INCONSISTENT_NUMA_VECTORS)
    if payload.busiest_node in payload.vectors:
        raise NumaPlacementError(Reason.CORRUPTED_NUMA_VECTOR)


def _validate_shared(payload: Payload) -> None:
    if payload.containers < 0:
        raise NumaPlacementError(Reason.INCONSISTENT_CONTAINER_SET)
    if payload.numa_nodes <= 0:
        raise NumaPlacementError(Reason.INCONSISTENT_NUMA_NODES)
    if payload.containers == 0 and payload.vectors:
        raise NumaPlacementError(Reason.INCONSISTENT_NUMA_VECTORS)
    if len(payload.vectors) > payload.numa_nodes:
        raise NumaPlacementError(Reason.INCONSISTENT_NUMA_VECTORS)
    if payload.busiest_node >= payload.numa_nodes:
        raise NumaPlacementError(Reason.INCONSISTENT_BUSIEST_NODE)
    if any(not 0 <= numa < payload.numa_nodes for numa in payload.vectors):
        raise NumaPlacementError(Reason.CORRUPTED_NUMA_VECTOR)


def validate(payload: Payload) -> None:
    """Upstream's decoder-side checks, in their order (the vectors themselves are not read)."""
    _validate_leb89(payload)
    _validate_shared(payload)


# ----------------------------------------------------------------------------- encoding


def encode(numa_nodes: int, affinities: Iterable[ContainerAffinity]) -> Payload:
    """The payload for ``affinities`` on a machine with ``numa_nodes`` NUMA nodes.

    A container given twice keeps its last affinity. With no container the busiest node
    is 0 and there are no vectors.
    """
    if numa_nodes <= 0:
        raise NumaPlacementError(Reason.INCONSISTENT_NUMA_NODES)
    placement: dict[int, int] = {}
    for affinity in affinities:
        if affinity.numa_node == UNKNOWN:
            raise NumaPlacementError(Reason.UNSUPPORTED_UNKNOWN_NUMA_AFFINITY, str(affinity.id))
        if not 0 <= affinity.numa_node < numa_nodes:
            raise NumaPlacementError(Reason.WRONG_NUMA_AFFINITY, str(affinity.id))
        placement[affinity.id.hash()] = affinity.numa_node
    if not placement:
        return Payload(0, numa_nodes, 0)
    per_numa: dict[int, list[int]] = {}
    for offset, digest in enumerate(sorted(placement)):
        per_numa.setdefault(placement[digest], []).append(offset)
    busiest, most = 0, 0
    for numa in sorted(per_numa):
        if len(per_numa[numa]) > most:
            busiest, most = numa, len(per_numa[numa])
    vectors = {numa: encode_vector(offsets) for numa, offsets in sorted(per_numa.items()) if numa != busiest}
    return Payload(len(placement), numa_nodes, busiest, VECTOR_ENCODING_LEB89, vectors)


# ----------------------------------------------------------------------------- decoding


@dataclass(frozen=True, slots=True)
class PlacementInfo:
    """Decoded placement: container hash -> NUMA node."""

    placement: Mapping[int, int] = field(default_factory=dict)

    @property
    def containers(self) -> int:
        return len(self.placement)

    def numa_affinity(self, container: ContainerID) -> int:
        """The NUMA node of ``container``; :class:`NumaPlacementError` if it was not encoded."""
        numa = self.placement.get(container.hash())
        if numa is None:
            raise NumaPlacementError(Reason.UNKNOWN_CONTAINER, str(container))
        return numa


def decode(payload: Payload, containers: Iterable[ContainerID]) -> PlacementInfo:
    """Where each of ``containers`` (the set the encoder saw, duplicates ignored) is placed."""
    validate(payload)
    hashes = sorted({container.hash() for container in containers})
    if len(hashes) != payload.containers:
        raise NumaPlacementError(Reason.INCONSISTENT_CONTAINER_SET)
    placement: dict[int, int] = {}
    for numa in sorted(payload.vectors):
        for offset in decode_vector(payload.vectors[numa]):
            if not 0 <= offset < len(hashes):
                raise NumaPlacementError(Reason.CORRUPTED_NUMA_VECTOR)
            if hashes[offset] in placement:
                raise NumaPlacementError(Reason.DUPLICATED_NUMA_VECTOR)
            placement[hashes[offset]] = numa
    for digest in hashes:
        placement.setdefault(digest, payload.busiest_node)
    return PlacementInfo(placement)
