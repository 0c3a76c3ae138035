"""The CPU manager's checkpoint, ``/var/lib/kubelet/cpu_manager_state`` (v2).

``state.CPUManagerCheckpoint`` with its cpusets as the strings in the file: the checksum over
go-spew's rendering, the bytes the kubelet's ``json.Marshal`` writes, and decoding with
upstream's checks (``checksum: 0`` accepted unverified, "empty checksum for compatibility").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from nrop.api.checkpoints.encoding import (
    CheckpointError,
    CorruptCheckpointError,
    _checksum_field,
    _field,
    _parse_json_object,
    fnv32a,
    go_json,
)

CPU_MANAGER_STATE_FILE: Final = "cpu_manager_state"
#: The ``policyName`` values each manager writes (``--cpu-manager-policy``, ``--memory-manager-policy``).
CPU_MANAGER_POLICIES: Final = ("none", "static")


# --- CPU manager (cpu_manager_state, v2) ------------------------------------------------------


@dataclass(frozen=True)
class CPUManagerCheckpoint:
    """``state.CPUManagerCheckpoint`` with its cpusets as the strings written in the file."""

    policy_name: str
    default_cpuset: str
    #: ``entries[pod uid][container name]`` = cpuset string.
    entries: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    checksum: int = 0


def cpu_manager_checksum(
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
    return fnv32a(dump.encode())


def encode_cpu_manager_checkpoint(
    policy_name: str, default_cpuset: str, entries: Mapping[str, Mapping[str, str]]
) -> bytes:
    """The file's bytes exactly as the kubelet's ``json.Marshal`` writes them (``entries`` omitted when empty)."""
    kept = {pod: dict(sorted(cs.items())) for pod, cs in sorted(entries.items()) if cs}
    checksum = cpu_manager_checksum(policy_name, default_cpuset, kept)
    body = f'{{"policyName":{go_json(policy_name)},"defaultCpuSet":{go_json(default_cpuset)}'
    if kept:
        body += f',"entries":{go_json(kept)}'
    return f'{body},"checksum":{checksum}}}'.encode()


def decode_cpu_manager_checkpoint(data: bytes | str) -> CPUManagerCheckpoint:
    """Parse a v2 checkpoint and verify its checksum (``checksum: 0`` is accepted unverified, like upstream).

    The policy is not checked and the cpusets are not parsed: that is the reader's business.
    """
    obj = _parse_json_object(data)
    _, name = _field(obj, "policyName")
    _, default = _field(obj, "defaultCpuSet")
    has_entries, entries = _field(obj, "entries")
    _, checksum = _field(obj, "checksum")
    name = "" if name is None else name
    default = "" if default is None else default
    if not isinstance(name, str) or not isinstance(default, str):
        raise CheckpointError("could not parse checkpoint: policyName and defaultCpuSet must be strings")
    checksum = _checksum_field(checksum)
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
    if checksum != 0 and checksum != cpu_manager_checksum(name, default, entries):
        raise CorruptCheckpointError("checkpoint is corrupted")
    return CPUManagerCheckpoint(name, default, entries or {}, checksum)
