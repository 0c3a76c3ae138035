"""The profile YAML schema: parse a profile's pools into ``NodeSpec``s, or say exactly what is wrong.

Owns the mapping from the documented YAML format (``README.md`` next to this file) to the
kubelet's machine model, and the validation that stops ``nrop-cluster up`` on a bad
profile. Every error is a :class:`ProfileError` reading
``<file>: <field path>: <problem>``, e.g.
``default.yaml: pools[1].machine.numaNodes[0].hugepages.1Gi: must be a non-negative integer``.

Two layers of checks: the schema's own (types, unknown fields, ranges, consistency
between CPUs, NUMA nodes and devices), then, per pool, the kubelet's startup validation
(``nodestatus.validate_kubelet_config``: reservations, eviction thresholds,
``reservedSystemCPUs``, the CPU, memory and topology managers), reported under the
pool's ``kubelet`` path with upstream's text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from nrop.api.quantity import QuantityError, parse
from nrop.api.selectors import label_value_errors, qualified_name_errors
from nrop.localcluster.kubelet.cm import CPUTopology, TopologyError, format_binary_si
from nrop.localcluster.kubelet.decisions.nodestatus import KubeletConfigError, validate_kubelet_config
from nrop.localcluster.kubelet.machine import (
    HUGEPAGE_SIZES,
    DeviceGroup,
    KubeletConfig,
    Machine,
    MemoryReservation,
    NodeSpec,
    NUMANode,
    Taint,
)
from nrop.localcluster.kubelet.sysfs import default_distances

__all__ = [
    "KUBELET_FIELDS",
    "ProfileError",
    "build_nodes",
    "openshift_version",
    "parse_kubelet_config",
    "reboot_seconds",
]

T = TypeVar("T")


class ProfileError(ValueError):
    """A profile that cannot be used: names the file, the field path and what is wrong."""


_NUMBERING = ("linux-interleaved", "linux-contiguous")
_HUGEPAGE_NAMES = {format_binary_si(size): size for size in HUGEPAGE_SIZES}  # "2Mi", "1Gi"
_TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*")

_TOP_FIELDS = ("summary", "pools", "openshift", "machineConfig")
_OPENSHIFT_FIELDS = ("version",)
_MACHINE_CONFIG_FIELDS = ("rebootSeconds",)
_OPENSHIFT_VERSION = re.compile(r"4\.\d+\.\d+")
_POOL_FIELDS = ("name", "namePrefix", "count", "controlPlane", "labels", "taints", "machine", "kubelet")
_MACHINE_FIELDS = ("cpus", "numaNodes", "devices", "ephemeralStorage")
_SCHEME_FIELDS = ("numbering", "sockets", "numaNodesPerSocket", "coresPerNumaNode", "threadsPerCore")
_NUMA_FIELDS = ("memory", "hugepages", "distances")
_DEVICE_FIELDS = ("resource", "perNumaNode", "withoutTopology", "unhealthy")
_KUBELET_FIELDS = (
    "cpuManagerPolicy",
    "cpuManagerPolicyOptions",
    "reservedSystemCPUs",
    "systemReserved",
    "kubeReserved",
    "evictionHard",
    "memoryManagerPolicy",
    "reservedMemory",
    "topologyManagerPolicy",
    "topologyManagerScope",
    "topologyManagerPolicyOptions",
    "maxPods",
    "featureGates",
    "tlsMinVersion",
    "tlsCipherSuites",
)
#: The KubeletConfiguration fields a profile (and so an emulated kubelet) can express.
KUBELET_FIELDS = _KUBELET_FIELDS


class _Reader:
    """Typed accessors over parsed YAML that raise ``ProfileError`` with the field path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, problem: str) -> ProfileError:
        return ProfileError(f"{self.source}: {path}: {problem}" if path else f"{self.source}: {problem}")

    def mapping(self, value: Any, path: str, fields: tuple[str, ...] | None = None) -> dict[Any, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(path, "must be a mapping")
        if fields is not None:
            for key in value:
                if key not in fields and not (path == "" and str(key).startswith("x-")):
                    raise self.fail(_join(path, key), f"unknown field (known: {', '.join(fields)})")
        return value

    def list(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(path, "must be a list")
        return value

    def integer(self, value: Any, path: str, minimum: int = 0) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            kind = {0: "a non-negative integer", 1: "a positive integer"}.get(
                minimum, f"an integer >= {minimum}"
            )
            raise self.fail(path, f"must be {kind}")
        return value

    def string(self, value: Any, path: str) -> str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(path, "must be a string")
        return str(value)

    def choice(self, value: Any, path: str, choices: tuple[str, ...]) -> str:
        text = self.string(value, path)
        if text not in choices:
            raise self.fail(path, f"must be one of {', '.join(choices)}, not {text!r}")
        return text

    def boolean(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, "must be true or false")
        return value

    def option_map(self, value: Any, path: str) -> dict[str, str]:
        """A string map as KubeletConfiguration has them; YAML booleans become "true"/"false"."""
        out: dict[str, str] = {}
        for key, item in self.mapping(value, path).items():
            if isinstance(item, bool):
                out[str(key)] = "true" if item else "false"
            else:
                out[str(key)] = self.string(item, _join(path, key))
        return out

    def quantity_text(self, value: Any, path: str) -> str:
        text = self.string(value, path)
        try:
            parse(text)
        except QuantityError as exc:
            raise self.fail(path, f"not a quantity: {exc.reason}") from None
        return text

    def byte_size(self, value: Any, path: str) -> int:
        """A whole, non-negative number of bytes, given as a quantity (``16Gi``) or an integer."""
        text = self.quantity_text(value, path)
        quantity = parse(text)
        if quantity.sign() < 0 or quantity.nanos % 10**9:
            raise self.fail(path, f"must be a non-negative whole number of bytes, not {text!r}")
        return quantity.value()

    def each(self, value: Any, path: str, item: Callable[[Any, str], T]) -> list[T]:
        return [item(entry, f"{path}[{i}]") for i, entry in enumerate(self.list(value, path))]


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


# -- machine --------------------------------------------------------------------------------------


def _cpu_topology(r: _Reader, value: Any, path: str) -> CPUTopology:
    cpus = r.mapping(value, path, (*_SCHEME_FIELDS, "table"))
    if not cpus:
        raise r.fail(path, "required: a numbering scheme (coresPerNumaNode, ...) or an explicit table")
    if "table" in cpus:
        others = sorted(k for k in cpus if k != "table")
        if others:
            raise r.fail(path, f"table excludes the scheme fields ({', '.join(others)} given)")
        return _cpu_table(r, cpus["table"], _join(path, "table"))
    if "coresPerNumaNode" not in cpus:
        raise r.fail(_join(path, "coresPerNumaNode"), "required")
    try:
        return CPUTopology.from_scheme(
            r.choice(cpus.get("numbering", _NUMBERING[0]), _join(path, "numbering"), _NUMBERING),  # type: ignore[arg-type]
            sockets=r.integer(cpus.get("sockets", 1), _join(path, "sockets"), 1),
            numa_nodes_per_socket=r.integer(
                cpus.get("numaNodesPerSocket", 1), _join(path, "numaNodesPerSocket"), 1
            ),
            cores_per_numa_node=r.integer(cpus["coresPerNumaNode"], _join(path, "coresPerNumaNode"), 1),
            threads_per_core=r.integer(cpus.get("threadsPerCore", 2), _join(path, "threadsPerCore"), 1),
        )
    except TopologyError as exc:
        raise r.fail(path, str(exc)) from None


def _cpu_table(r: _Reader, value: Any, path: str) -> CPUTopology:
    table: dict[int, tuple[int, int, int]] = {}
    for cpu, given in r.mapping(value, path).items():
        here = _join(path, cpu)
        row = given
        if isinstance(cpu, bool) or not isinstance(cpu, int) or cpu < 0:
            raise r.fail(here, "CPU ids must be non-negative integers")
        if isinstance(row, dict):
            row = r.mapping(row, here, ("core", "socket", "numaNode"))
            missing = [k for k in ("core", "socket", "numaNode") if k not in row]
            if missing:
                raise r.fail(here, f"missing {', '.join(missing)}")
            row = [row["core"], row["socket"], row["numaNode"]]
        if not isinstance(row, list) or len(row) != 3:
            raise r.fail(here, "must be [core, socket, numaNode] or {core, socket, numaNode}")
        table[cpu] = (
            r.integer(row[0], f"{here}.core"),
            r.integer(row[1], f"{here}.socket"),
            r.integer(row[2], f"{here}.numaNode"),
        )
    if not table:
        raise r.fail(path, "must list at least one CPU")
    numa_sockets: dict[int, set[int]] = {}
    for core, socket, numa in table.values():
        del core
        numa_sockets.setdefault(numa, set()).add(socket)
    for numa, sockets in sorted(numa_sockets.items()):
        if len(sockets) > 1:
            raise r.fail(
                path, f"NUMA node {numa} spans sockets {sorted(sockets)}; a NUMA node lies in one socket"
            )
    return CPUTopology.from_table(table)


def _hugepages(r: _Reader, value: Any, path: str) -> dict[int, int]:
    out: dict[int, int] = {}
    for name, count in r.mapping(value, path).items():
        here = _join(path, name)
        size = _HUGEPAGE_NAMES.get(str(name))
        if size is None:
            raise r.fail(here, f"unsupported hugepage size (supported: {', '.join(_HUGEPAGE_NAMES)})")
        out[size] = r.integer(count, here)
    return out


def _numa_nodes(r: _Reader, value: Any, path: str, topology: CPUTopology) -> tuple[NUMANode, ...]:
    entries = r.list(value, path)
    cpu_nodes = topology.details.numa_nodes().to_list()
    if cpu_nodes != list(range(len(entries))):
        raise r.fail(
            path,
            f"{len(entries)} entries, but the CPUs are on NUMA nodes {cpu_nodes}: "
            "list one entry per NUMA node, in id order from 0",
        )
    node_sockets = {n: min(topology.details.sockets_in_numa_nodes(n)) for n in cpu_nodes}
    fallback = default_distances(node_sockets)
    nodes: list[NUMANode] = []
    for i, entry in enumerate(entries):
        here = f"{path}[{i}]"
        fields = r.mapping(entry, here, _NUMA_FIELDS)
        if "memory" not in fields:
            raise r.fail(_join(here, "memory"), "required")
        memory = r.byte_size(fields["memory"], _join(here, "memory"))
        if memory % 1024:
            raise r.fail(_join(here, "memory"), "must be a multiple of 1Ki (meminfo counts kB)")
        hugepages = _hugepages(r, fields.get("hugepages"), _join(here, "hugepages"))
        huge_bytes = sum(size * count for size, count in hugepages.items())
        if huge_bytes > memory:
            raise r.fail(
                _join(here, "memory"),
                f"{format_binary_si(memory)} is less than the {format_binary_si(huge_bytes)} "
                "of hugepages on this NUMA node",
            )
        distances = fallback[i]
        if "distances" in fields:
            distances = _distances(r, fields["distances"], _join(here, "distances"), i, len(entries))
        nodes.append(NUMANode(id=i, memory_bytes=memory, hugepages=hugepages, distances=distances))
    return tuple(nodes)


def _distances(r: _Reader, value: Any, path: str, node: int, count: int) -> tuple[int, ...]:
    row = [r.integer(d, f"{path}[{j}]") for j, d in enumerate(r.list(value, path))]
    if len(row) != count:
        raise r.fail(path, f"must list {count} distances, one per NUMA node")
    for j, distance in enumerate(row):
        if j == node and distance != 10:
            raise r.fail(f"{path}[{j}]", "the distance of a NUMA node to itself must be 10")
        if j != node and not 11 <= distance <= 255:
            raise r.fail(f"{path}[{j}]", "a distance to another NUMA node must be between 11 and 255")
    return tuple(row)


def _devices(r: _Reader, value: Any, path: str, numa_count: int) -> tuple[DeviceGroup, ...]:
    groups: list[DeviceGroup] = []
    seen: set[str] = set()
    for i, entry in enumerate(r.list(value, path)):
        here = f"{path}[{i}]"
        fields = r.mapping(entry, here, _DEVICE_FIELDS)
        if "resource" not in fields:
            raise r.fail(_join(here, "resource"), "required")
        resource = r.string(fields["resource"], _join(here, "resource"))
        prefix, _, name = resource.partition("/")
        if not name or qualified_name_errors(resource):
            raise r.fail(
                _join(here, "resource"), f"{resource!r} is not an extended resource name (domain/name)"
            )
        if prefix == "kubernetes.io" or prefix.endswith(".kubernetes.io") or prefix == "requests":
            raise r.fail(_join(here, "resource"), f"{resource!r} is in a reserved domain")
        if resource in seen:
            raise r.fail(_join(here, "resource"), f"{resource!r} is listed twice")
        seen.add(resource)
        per_numa: dict[int | None, int] = {}
        spread = fields.get("perNumaNode", 0)
        where = _join(here, "perNumaNode")
        if isinstance(spread, dict):
            for key, count in spread.items():
                # JSON (and quoted YAML) keys are strings: "0" names NUMA node 0 too.
                node = int(key) if isinstance(key, str) and key.isdigit() else key
                if isinstance(node, bool) or not isinstance(node, int) or not 0 <= node < numa_count:
                    raise r.fail(_join(where, node), f"no such NUMA node (the machine has {numa_count})")
                per_numa[node] = r.integer(count, _join(where, node))
        else:
            per_numa = dict.fromkeys(range(numa_count), r.integer(spread, where))
        per_numa = {k: v for k, v in per_numa.items() if v}
        without = r.integer(fields.get("withoutTopology", 0), _join(here, "withoutTopology"))
        if without:
            per_numa[None] = without
        total = sum(per_numa.values())
        unhealthy = r.integer(fields.get("unhealthy", 0), _join(here, "unhealthy"))
        if unhealthy > total:
            raise r.fail(_join(here, "unhealthy"), f"{unhealthy} unhealthy of only {total} devices")
        groups.append(DeviceGroup(resource=resource, per_numa=per_numa, unhealthy=unhealthy))
    return tuple(groups)


def _machine(r: _Reader, value: Any, path: str) -> Machine:
    if value is None:
        raise r.fail(path, "required")
    fields = r.mapping(value, path, _MACHINE_FIELDS)
    topology = _cpu_topology(r, fields.get("cpus"), _join(path, "cpus"))
    numa_nodes = _numa_nodes(r, fields.get("numaNodes"), _join(path, "numaNodes"), topology)
    devices = _devices(r, fields.get("devices"), _join(path, "devices"), len(numa_nodes))
    machine = Machine(topology=topology, numa_nodes=numa_nodes, devices=devices)
    if "ephemeralStorage" in fields:
        storage = r.byte_size(fields["ephemeralStorage"], _join(path, "ephemeralStorage"))
        machine = Machine(
            topology=topology, numa_nodes=numa_nodes, devices=devices, ephemeral_storage_bytes=storage
        )
    return machine


# -- kubelet --------------------------------------------------------------------------------------


def _reserved_memory(r: _Reader, value: Any, path: str) -> tuple[MemoryReservation, ...]:
    out: list[MemoryReservation] = []
    for i, entry in enumerate(r.list(value, path)):
        here = f"{path}[{i}]"
        fields = r.mapping(entry, here, ("numaNode", "limits"))
        if "numaNode" not in fields:
            raise r.fail(_join(here, "numaNode"), "required")
        limits = {
            str(name): r.byte_size(size, _join(_join(here, "limits"), name))
            for name, size in r.mapping(fields.get("limits"), _join(here, "limits")).items()
        }
        out.append(
            MemoryReservation(numa_node=r.integer(fields["numaNode"], _join(here, "numaNode")), limits=limits)
        )
    return tuple(out)


def _quantity_map(r: _Reader, value: Any, path: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, item in r.mapping(value, path).items():
        here = _join(path, name)
        text = r.string(item, here)
        out[str(name)] = text if text.endswith("%") else r.quantity_text(text, here)
    return out


def _kubelet(r: _Reader, value: Any, path: str) -> KubeletConfig:
    fields = r.mapping(value, path, _KUBELET_FIELDS)
    defaults = KubeletConfig()
    at = lambda key: _join(path, key)  # noqa: E731
    gates = {}
    for name, enabled in r.mapping(fields.get("featureGates"), at("featureGates")).items():
        gates[str(name)] = r.boolean(enabled, _join(at("featureGates"), name))
    return KubeletConfig(
        cpu_manager_policy=r.string(
            fields.get("cpuManagerPolicy", defaults.cpu_manager_policy), at("cpuManagerPolicy")
        ),
        cpu_manager_policy_options=r.option_map(
            fields.get("cpuManagerPolicyOptions"), at("cpuManagerPolicyOptions")
        ),
        reserved_system_cpus=r.string(fields.get("reservedSystemCPUs", ""), at("reservedSystemCPUs")),
        system_reserved=_quantity_map(r, fields.get("systemReserved"), at("systemReserved")),
        kube_reserved=_quantity_map(r, fields.get("kubeReserved"), at("kubeReserved")),
        eviction_hard=(
            _quantity_map(r, fields["evictionHard"], at("evictionHard"))
            if "evictionHard" in fields
            else defaults.eviction_hard
        ),
        memory_manager_policy=r.string(
            fields.get("memoryManagerPolicy", defaults.memory_manager_policy), at("memoryManagerPolicy")
        ),
        reserved_memory=_reserved_memory(r, fields.get("reservedMemory"), at("reservedMemory")),
        topology_manager_policy=r.string(
            fields.get("topologyManagerPolicy", defaults.topology_manager_policy), at("topologyManagerPolicy")
        ),
        topology_manager_scope=r.string(
            fields.get("topologyManagerScope", defaults.topology_manager_scope), at("topologyManagerScope")
        ),
        topology_manager_policy_options=r.option_map(
            fields.get("topologyManagerPolicyOptions"), at("topologyManagerPolicyOptions")
        ),
        max_pods=r.integer(fields.get("maxPods", defaults.max_pods), at("maxPods")),
        feature_gates=gates,
        tls_min_version=r.string(fields.get("tlsMinVersion", ""), at("tlsMinVersion")),
        tls_cipher_suites=tuple(r.each(fields.get("tlsCipherSuites") or [], at("tlsCipherSuites"), r.string)),
    )


def parse_kubelet_config(value: Any, source: str, path: str = "") -> KubeletConfig:
    """A ``kubelet`` mapping (KubeletConfiguration field names) as a :class:`KubeletConfig`.

    The same reading as a profile pool's ``kubelet``; the embedded MachineConfig operator
    uses it for a pool's configuration with the KubeletConfigs laid over it.
    """
    return _kubelet(_Reader(source), value, path)


# -- pools ----------------------------------------------------------------------------------------


def _labels(r: _Reader, value: Any, path: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for given, item in r.mapping(value, path).items():
        here = _join(path, given)
        key = str(given)
        if qualified_name_errors(key):
            raise r.fail(here, "not a valid label key")
        text = "" if item is None else r.string(item, here)
        if label_value_errors(text):
            raise r.fail(here, f"{text!r} is not a valid label value")
        labels[key] = text
    return labels


def _taints(r: _Reader, value: Any, path: str) -> tuple[Taint, ...]:
    def taint(entry: Any, here: str) -> Taint:
        fields = r.mapping(entry, here, ("key", "value", "effect"))
        for required in ("key", "effect"):
            if required not in fields:
                raise r.fail(_join(here, required), "required")
        return Taint(
            key=r.string(fields["key"], _join(here, "key")),
            effect=r.choice(fields["effect"], _join(here, "effect"), _TAINT_EFFECTS),
            value=r.string(fields.get("value", ""), _join(here, "value")),
        )

    return tuple(r.each(value, path, taint))


def _pool_names(r: _Reader, fields: Mapping[str, Any], path: str) -> tuple[str, list[str]]:
    count = r.integer(fields.get("count", 1), _join(path, "count"))
    if ("name" in fields) == ("namePrefix" in fields):
        raise r.fail(
            path, "give exactly one of name (a single node) or namePrefix (nodes <prefix>-0, -1, ...)"
        )
    if "name" in fields:
        name = r.string(fields["name"], _join(path, "name"))
        if count != 1:
            raise r.fail(_join(path, "count"), "must be 1 with name (use namePrefix for several nodes)")
        names, where, label = [name], _join(path, "name"), name
    else:
        label = r.string(fields["namePrefix"], _join(path, "namePrefix"))
        names, where = [f"{label}-{i}" for i in range(count)], _join(path, "namePrefix")
    for name in names or [f"{label}-0"]:
        if len(name) > 253 or not _DNS_SUBDOMAIN.fullmatch(name):
            raise r.fail(where, f"{name!r} is not a valid node name (a lowercase DNS-1123 subdomain)")
    return label, names


def build_nodes(data: Mapping[str, Any], source: str) -> list[NodeSpec]:
    """All nodes of a parsed profile, validated; raises :class:`ProfileError` naming ``source``."""
    r = _Reader(source)
    top = r.mapping(data, "", _TOP_FIELDS)
    if "summary" in top:
        r.string(top["summary"], "summary")
    nodes: list[NodeSpec] = []
    owner: dict[str, str] = {}
    for i, pool in enumerate(r.list(top.get("pools"), "pools")):
        path = f"pools[{i}]"
        fields = r.mapping(pool, path, _POOL_FIELDS)
        label, names = _pool_names(r, fields, path)
        machine = _machine(r, fields.get("machine"), _join(path, "machine"))
        kubelet = _kubelet(r, fields.get("kubelet"), _join(path, "kubelet"))
        control_plane = r.boolean(fields.get("controlPlane", False), _join(path, "controlPlane"))
        labels = _labels(r, fields.get("labels"), _join(path, "labels"))
        taints = _taints(r, fields.get("taints"), _join(path, "taints"))
        template = NodeSpec(
            name=names[0] if names else label,
            machine=machine,
            kubelet=kubelet,
            labels=labels,
            taints=taints,
            control_plane=control_plane,
        )
        try:
            validate_kubelet_config(template)
        except KubeletConfigError as exc:
            where = _join(_join(path, "kubelet"), exc.field) if exc.field else _join(path, "kubelet")
            raise r.fail(where, f"the kubelet of pool {label!r} would not start: {exc.message}") from None
        for name in names:
            if name in owner:
                raise r.fail(path, f"node name {name!r} is already used by {owner[name]}")
            owner[name] = path
            nodes.append(
                NodeSpec(
                    name=name,
                    machine=machine,
                    kubelet=kubelet,
                    labels=dict(labels),
                    taints=taints,
                    control_plane=control_plane,
                )
            )
    return nodes


def openshift_version(data: Mapping[str, Any], source: str) -> str | None:
    """The OpenShift version a profile of the OpenShift flavour states (``openshift.version``,
    ``4.<minor>.<patch>``), or ``None`` for a Kubernetes profile."""
    r = _Reader(source)
    top = r.mapping(data, "", _TOP_FIELDS)
    if "openshift" not in top:
        return None
    fields = r.mapping(top["openshift"], "openshift", _OPENSHIFT_FIELDS)
    if "version" not in fields:
        raise r.fail("openshift.version", "is required (the OpenShift version the cluster reports)")
    version = r.string(fields["version"], "openshift.version")
    if not _OPENSHIFT_VERSION.fullmatch(version):
        raise r.fail("openshift.version", f"must be an OpenShift version such as 4.22.0, not {version!r}")
    return version


def reboot_seconds(data: Mapping[str, Any], source: str) -> float | None:
    """How long a node the embedded MachineConfig operator updates stays down
    (``machineConfig.rebootSeconds``, a number of seconds above zero), or ``None`` for its default."""
    r = _Reader(source)
    top = r.mapping(data, "", _TOP_FIELDS)
    if "machineConfig" not in top:
        return None
    fields = r.mapping(top["machineConfig"], "machineConfig", _MACHINE_CONFIG_FIELDS)
    if "rebootSeconds" not in fields:
        return None
    value = fields["rebootSeconds"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise r.fail("machineConfig.rebootSeconds", f"must be a number of seconds above zero, not {value!r}")
    return float(value)
