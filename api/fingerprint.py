"""The pod fingerprint: a compact signature of the set of pods on a node.

This module owns the ``pfp0v001…`` strings that the resource-topology exporter publishes
in NRT objects (attribute ``nodeTopologyPodsFingerprint`` and the legacy annotation
``topology.node.k8s.io/fingerprint``) and that the scheduler recomputes to decide whether
an NRT object reflects the pods it knows about. It is wire-compatible with
github.com/k8stopologyawareschedwg/podfingerprint (v0.2.x, version ``v001``):

* a pod is identified by (namespace, name) only;
* each pod hashes to ``XXH64(name, seed=XXH64(namespace, seed=0))``;
* the per-pod hashes are sorted as unsigned 64-bit integers (duplicates kept, so the
  set semantics come from sorting, not from XOR) and fed, as 8-byte little-endian
  words, to one streaming XXH64 with seed 0;
* the signature is ``"pfp0" + "v001"`` followed by the digest in 16 lowercase hex
  digits (big-endian). The empty set is valid.

Which pods are counted (``all`` or ``with-exclusive-resources``) is the caller's
decision; this module only names the methods. :class:`Status` mirrors upstream's
tracing status, used for the exporter's debug dump.
"""

from __future__ import annotations

import enum
import json
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import xxhash

from .fielderrors import go_quote

__all__ = [
    "ANNOTATION",
    "ATTRIBUTE",
    "ATTRIBUTE_METHOD",
    "DEFAULT_METHOD",
    "PREFIX",
    "RTE_METHODS",
    "VERSION",
    "Fingerprint",
    "FingerprintError",
    "IncompatibleVersionError",
    "MalformedError",
    "Method",
    "NamespacedName",
    "NullTracer",
    "SignatureMismatchError",
    "Status",
    "Tracer",
    "check",
    "compute",
    "is_version_compatible",
    "normalize_method",
    "pod_hash",
]

PREFIX: Final = "pfp0"
VERSION: Final = "v001"
ANNOTATION: Final = "topology.node.k8s.io/fingerprint"
ATTRIBUTE: Final = "nodeTopologyPodsFingerprint"
ATTRIBUTE_METHOD: Final = "nodeTopologyPodsFingerprintMethod"

_PREFIX_LEN: Final = 4
_VERSION_LEN: Final = 4
_MIN_SUM_LEN: Final = 8


class Method(enum.StrEnum):
    """Which pods a fingerprint covers (value of ``nodeTopologyPodsFingerprintMethod``)."""

    ALL = "all"
    WITH_EXCLUSIVE_RESOURCES = "with-exclusive-resources"
    EXCLUDE_TERMINAL = "exclude-terminal"  # newest podfingerprint only; RTE rejects it


#: The methods the resource-topology exporter accepts, and its default.
RTE_METHODS: Final = (Method.ALL, Method.WITH_EXCLUSIVE_RESOURCES)
DEFAULT_METHOD: Final = Method.WITH_EXCLUSIVE_RESOURCES


def normalize_method(value: str, allowed: Iterable[Method] = RTE_METHODS) -> Method:
    """Lower-case and validate a method name, as the exporter does with its flag."""
    candidate = value.strip().lower()
    choices = tuple(allowed)
    for method in choices:
        if candidate == method.value:
            return method
    names = ", ".join(repr(m.value) for m in choices)
    raise ValueError(f"unsupported pods fingerprint method {value!r}: expected one of {names}")


class FingerprintError(ValueError):
    """A fingerprint string that does not verify."""


class MalformedError(FingerprintError):
    def __init__(self) -> None:
        super().__init__("malformed fingerprint")


class IncompatibleVersionError(FingerprintError):
    def __init__(self) -> None:
        super().__init__("incompatible version")


class SignatureMismatchError(FingerprintError):
    """The pod set does not match; ``got`` is computed here, ``expected`` was given."""

    def __init__(self, got: str, expected: str) -> None:
        self.got = got
        self.expected = expected
        super().__init__(f"fingerprint mismatch got={go_quote(got)} expected={go_quote(expected)}")


def is_version_compatible(version: str) -> bool:
    """Whether a 4-character version field is the one this module computes."""
    if len(version) != _VERSION_LEN:
        raise MalformedError()
    return version == VERSION


def pod_hash(namespace: str, name: str) -> int:
    """The per-pod 64-bit hash: the name hashed with the namespace's hash as seed."""
    seed = xxhash.xxh64_intdigest(namespace.encode())
    return xxhash.xxh64_intdigest(name.encode(), seed=seed)


@dataclass(frozen=True, order=True, slots=True)
class NamespacedName:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class Tracer(Protocol):
    """Observes a fingerprint being built (upstream's ``Tracer``)."""

    def start(self, num_pods: int) -> None: ...
    def add(self, namespace: str, name: str) -> None: ...
    def sign(self, computed: str) -> None: ...
    def check(self, expected: str) -> None: ...


class NullTracer:
    def start(self, num_pods: int) -> None:
        pass

    def add(self, namespace: str, name: str) -> None:
        pass

    def sign(self, computed: str) -> None:
        pass

    def check(self, expected: str) -> None:
        pass


@dataclass
class Status:
    """What a fingerprint saw: its pods in input order, the computed and expected signs.

    A :class:`Tracer`. ``to_dict`` is upstream's JSON (empty fields omitted, pods as
    ``{"Namespace", "Name"}``); ``render`` is upstream's ``Repr`` text.
    """

    fingerprint_expected: str = ""
    fingerprint_computed: str = ""
    pods: list[NamespacedName] = field(default_factory=list)
    node_name: str = ""

    def start(self, num_pods: int) -> None:
        self.pods = []

    def add(self, namespace: str, name: str) -> None:
        self.pods.append(NamespacedName(namespace, name))

    def sign(self, computed: str) -> None:
        self.fingerprint_computed = computed

    def check(self, expected: str) -> None:
        self.fingerprint_expected = expected

    def clone(self) -> Status:
        return Status(self.fingerprint_expected, self.fingerprint_computed, list(self.pods), self.node_name)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.fingerprint_expected:
            out["fingerprintExpected"] = self.fingerprint_expected
        if self.fingerprint_computed:
            out["fingerprintComputed"] = self.fingerprint_computed
        if self.pods:
            out["pods"] = [{"Namespace": p.namespace, "Name": p.name} for p in self.pods]
        if self.node_name:
            out["nodeName"] = self.node_name
        return out

    def to_json(self) -> str:
        """Compact JSON, byte-identical to upstream's ``json.Marshal(status)``."""
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)

    def render(self) -> str:
        lines = [f"> processing node {go_quote(self.node_name)}", f"> processing {len(self.pods)} pods"]
        lines += [f"+ {pod}" for pod in self.pods]
        lines.append(f"= {self.fingerprint_computed}")
        if self.fingerprint_expected:
            lines.append(f"V {self.fingerprint_expected}")
        return "\n".join(lines) + "\n"


class Fingerprint:
    """Accumulates pods and signs the set. Order of :meth:`add` calls does not matter."""

    def __init__(self, tracer: Tracer | None = None) -> None:
        self._hashes: list[int] = []
        self._tracer: Tracer = tracer if tracer is not None else NullTracer()

    def __len__(self) -> int:
        return len(self._hashes)

    def reset(self) -> None:
        self._hashes = []

    def add(self, namespace: str, name: str) -> None:
        self._tracer.add(namespace, name)
        self._hashes.append(pod_hash(namespace, name))

    def add_all(self, pods: Iterable[tuple[str, str]]) -> None:
        for namespace, name in pods:
            self.add(namespace, name)

    def sum(self) -> bytes:
        """The 8-byte digest of the current pod set."""
        self._hashes.sort()
        payload = struct.pack(f"<{len(self._hashes)}Q", *self._hashes)
        return xxhash.xxh64(payload).digest()

    def sign(self) -> str:
        signature = PREFIX + VERSION + self.sum().hex()
        self._tracer.sign(signature)
        return signature

    def check(self, signature: str) -> None:
        """Raise a :class:`FingerprintError` unless ``signature`` matches the pod set."""
        self._tracer.check(signature)
        if len(signature) < _PREFIX_LEN + _VERSION_LEN + _MIN_SUM_LEN:
            raise MalformedError()
        if signature[:_PREFIX_LEN] != PREFIX:
            raise MalformedError()
        if not is_version_compatible(signature[_PREFIX_LEN : _PREFIX_LEN + _VERSION_LEN]):
            raise IncompatibleVersionError()
        expected = signature[_PREFIX_LEN + _VERSION_LEN :]
        got = self.sum().hex()
        if got != expected:
            raise SignatureMismatchError(got, expected)

    def matches(self, signature: str) -> bool:
        try:
            self.check(signature)
        except FingerprintError:
            return False
        return True


def compute(pods: Iterable[tuple[str, str]]) -> str:
    """The signature of a set of (namespace, name) pairs."""
    fp = Fingerprint()
    fp.add_all(pods)
    return fp.sign()


def check(pods: Iterable[tuple[str, str]], signature: str) -> None:
    """Raise a :class:`FingerprintError` unless ``signature`` is the pods' signature."""
    fp = Fingerprint()
    fp.add_all(pods)
    fp.check(signature)
