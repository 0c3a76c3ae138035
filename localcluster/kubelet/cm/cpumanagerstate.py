"""The CPU manager's state and its ``/var/lib/kubelet/cpu_manager_state`` checkpoint.

Owns ``CPUManagerState`` (the shared/default pool plus exclusive per-container
assignments, as upstream ``pkg/kubelet/cm/cpumanager/state`` keeps it) and the
checkpoint that persists it: byte compatible with upstream (v2 format, map keys
sorted, FNV-32a checksum over go-spew's dump; the wire format is shared with the
numainfo exporter in ``nrop.api.checkpoints``), with upstream's texts for an
unreadable, corrupted or foreign-policy file (``CheckpointError``).  Also home of
``CPUManagerError``, the base of every CPU manager error, because
``CheckpointError`` is one; the policy that decides the state is in ``cpumanager``.

No I/O: the kubelet reads/writes the checkpoint bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nrop.api import checkpoints
from nrop.api.checkpoints import cpu_manager_checksum as checkpoint_checksum
from nrop.localcluster.kubelet.cm.cpuset import CPUSet, CPUSetParseError

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


def encode_checkpoint(state: CPUManagerState, policy_name: str = POLICY_STATIC) -> bytes:
    """The file's bytes exactly as the kubelet's ``json.Marshal`` writes them (``entries`` omitted when empty)."""
    entries = {pod: {c: str(s) for c, s in cs.items()} for pod, cs in state.entries.items()}
    return checkpoints.encode_cpu_manager_checkpoint(policy_name, str(state.default_cpuset), entries)


def decode_checkpoint(data: bytes | str, policy_name: str) -> CPUManagerState:
    """Parse and verify a v2 checkpoint (``checksum: 0`` is accepted unverified, like upstream)."""
    try:
        checkpoint = checkpoints.decode_cpu_manager_checkpoint(data)
    except checkpoints.CheckpointError as exc:
        raise CheckpointError(str(exc)) from None
    name, default = checkpoint.policy_name, checkpoint.default_cpuset
    if name != policy_name:
        raise CheckpointError(
            f'configured policy "{policy_name}" differs from state checkpoint policy "{name}"'
        )
    try:
        state = CPUManagerState(default_cpuset=CPUSet.parse(default))
    except CPUSetParseError as exc:
        raise CheckpointError(f'could not parse default CPU set "{default}": {exc}') from None
    for pod, containers in checkpoint.entries.items():
        for ctr, text in containers.items():
            try:
                state.set(pod, ctr, CPUSet.parse(text))
            except CPUSetParseError as exc:
                raise CheckpointError(
                    f'could not parse cpuset "{text}" for container "{ctr}" in pod "{pod}": {exc}'
                ) from None
    return state
