"""The CPU manager's state and its ``/var/lib/kubelet/cpu_manager_state`` checkpoint.

Owns ``CPUManagerState`` (the shared/default pool plus exclusive per-container
assignments, as upstream ``pkg/kubelet/cm/cpumanager/state`` keeps it) and the
checkpoint that persists it: byte compatible with upstream (v2 format, map keys
sorted, FNV-32a checksum over go-spew's dump), with upstream's texts for an
unreadable, corrupted or foreign-policy file (``CheckpointError``).  Also home of
``CPUManagerError``, the base of every CPU manager error, because
``CheckpointError`` is one; the policy that decides the state is in ``cpumanager``.

No I/O: the kubelet reads/writes the checkpoint bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nrop.localcluster.kubelet.cpuset import CPUSet, CPUSetParseError

__all__ = [
    "POLICY_STATIC",
    "CPUManagerError",
    "CPUManagerState",
    "CheckpointError",
    "checkpoint_checksum",
    "decode_checkpoint",
    "encode_checkpoint",
]

POLICY_STATIC = "static"


class CPUManagerError(Exception):
    """Base of the CPU manager's errors; ``str()`` is the upstream text."""


class CheckpointError(CPUManagerError):
    """The checkpoint cannot be read; a checksum mismatch reads ``checkpoint is corrupted``."""


# -- state --------------------------------------------------------------------------------------


@dataclass
class CPUManagerState:
    """The shared pool (``defaultCpuSet``) and exclusive assignments ``entries[pod uid][container]``."""

    default_cpuset: CPUSet = field(default_factory=CPUSet)
    entries: dict[str, dict[str, CPUSet]] = field(default_factory=dict)

    def get(self, pod_uid: str, container: str) -> CPUSet | None:
        return self.entries.get(pod_uid, {}).get(container)

    def set(self, pod_uid: str, container: str, cpus: CPUSet) -> None:
        self.entries.setdefault(pod_uid, {})[container] = cpus

    def delete(self, pod_uid: str, container: str) -> None:
        containers = self.entries.get(pod_uid)
        if containers is None:
            return
        containers.pop(container, None)
        if not containers:
            del self.entries[pod_uid]

    def clone(self) -> CPUManagerState:
        return CPUManagerState(self.default_cpuset, {p: dict(c) for p, c in self.entries.items()})


# -- checkpoint (/var/lib/kubelet/cpu_manager_state, v2) --------------------------------------------


def checkpoint_checksum(
    policy_name: str, default_cpuset: str, entries: Mapping[str, Mapping[str, str]] | None
) -> int:
    """FNV-32a over ``dump.ForHash(&CPUManagerCheckpoint{..., Checksum: 0})`` (go-spew ``%#v``)."""
    if entries is None:
        rendered_entries = "<nil>"
    else:
        pods = " ".join(
            f"{pod}:map[{' '.join(f'{c}:{s}' for c, s in sorted(entries[pod].items()))}]"
            for pod in sorted(entries)
        )
        rendered_entries = f"map[{pods}]"
    dump = (
        f"(*state.CPUManagerCheckpoint){{PolicyName:(string){policy_name} DefaultCPUSet:(string){default_cpuset} "
        f"Entries:(map[string]map[string]string){rendered_entries} Checksum:(checksum.Checksum)0}}"
    )
    h = 0x811C9DC5
    for byte in dump.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def _go_json(value: Any) -> str:
    # encoding/json: compact, map keys sorted, HTML-sensitive characters escaped.
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def encode_checkpoint(state: CPUManagerState, policy_name: str = POLICY_STATIC) -> bytes:
    """The file's bytes exactly as the kubelet's ``json.Marshal`` writes them (``entries`` omitted when empty)."""
    default = str(state.default_cpuset)
    entries = {pod: {c: str(s) for c, s in cs.items()} for pod, cs in state.entries.items() if cs}
    checksum = checkpoint_checksum(policy_name, default, entries)
    body = f'{{"policyName":{_go_json(policy_name)},"defaultCpuSet":{_go_json(default)}'
    if entries:
        body += f',"entries":{_go_json(entries)}'
    return f'{body},"checksum":{checksum}}}'.encode()


def _field(obj: dict[str, Any], name: str) -> tuple[bool, Any]:
    # encoding/json matches struct fields by exact name first, then case-insensitively.
    if name in obj:
        return True, obj[name]
    for key, value in obj.items():
        if key.lower() == name.lower():
            return True, value
    return False, None


def decode_checkpoint(data: bytes | str, policy_name: str) -> CPUManagerState:
    """Parse and verify a v2 checkpoint (``checksum: 0`` is accepted unverified, like upstream)."""
    try:
        obj = json.loads(data)
    except ValueError as exc:
        raise CheckpointError(f"could not parse checkpoint: {exc}") from None
    if not isinstance(obj, dict):
        raise CheckpointError("could not parse checkpoint: not a JSON object")
    _, name = _field(obj, "policyName")
    _, default = _field(obj, "defaultCpuSet")
    has_entries, entries = _field(obj, "entries")
    _, checksum = _field(obj, "checksum")
    name = "" if name is None else name
    default = "" if default is None else default
    checksum = 0 if checksum is None else checksum
    if not isinstance(name, str) or not isinstance(default, str):
        raise CheckpointError("could not parse checkpoint: policyName and defaultCpuSet must be strings")
    if not isinstance(checksum, int) or isinstance(checksum, bool) or not 0 <= checksum <= 0xFFFFFFFF:
        raise CheckpointError("could not parse checkpoint: checksum must be a uint32")
    if not has_entries:
        entries = {}
    if entries is not None and not (
        isinstance(entries, dict)
        and all(
            isinstance(cs, dict) and all(isinstance(s, str) for s in cs.values()) for cs in entries.values()
        )
    ):
        raise CheckpointError(
            "could not parse checkpoint: entries must map pod uid to container name to cpuset"
        )
    if checksum != 0 and checksum != checkpoint_checksum(name, default, entries):
        raise CheckpointError("checkpoint is corrupted")
    if name != policy_name:
        raise CheckpointError(
            f'configured policy "{policy_name}" differs from state checkpoint policy "{name}"'
        )
    try:
        state = CPUManagerState(default_cpuset=CPUSet.parse(default))
    except CPUSetParseError as exc:
        raise CheckpointError(f'could not parse default CPU set "{default}": {exc}') from None
    for pod, containers in (entries or {}).items():
        for ctr, text in containers.items():
            try:
                state.set(pod, ctr, CPUSet.parse(text))
            except CPUSetParseError as exc:
                raise CheckpointError(
                    f'could not parse cpuset "{text}" for container "{ctr}" in pod "{pod}": {exc}'
                ) from None
    return state
