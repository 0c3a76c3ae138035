"""The numainfo exporter: checkpoint bytes → per-NUMA figures → Prometheus samples, and its collector.

Tables for the pure decisions (``nrop.rte.decisions.numainfo``, the shared checkpoint format in
``nrop.api.checkpoints``), the collector over a sysfs tree and checkpoint files in a
temporary directory, the command line, and hypothesis fuzzing of corrupt checkpoints:
decoding raises only ``NUMAInfoError``, a damaged file yields either no figures or the
original ones, and the collector never raises and never changes the kubelet's files.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from nrop.api import checkpoints
from nrop.api.checkpoints import (
    Block,
    CheckpointError,
    CorruptCheckpointError,
    MemoryManagerCheckpoint,
    MemoryTable,
    NUMANodeState,
    encode_cpu_manager_checkpoint,
)
from nrop.rte.decisions import numainfo
from nrop.rte.decisions.numainfo import (
    MemoryFigures,
    NUMAInfoError,
    Sample,
    Snapshot,
    exclusive_cpus,
    memory_figures,
    samples,
    unmapped_cpus,
)
from nrop.rte.numainfoexporter import NUMAInfoCollector, main, parse_listen_address, read_checkpoint
from nrop.rte.sysinfo import MachineInfo, NUMANodeInfo

GI = 1024**3
MI = 1024**2
#: Two NUMA nodes, 4 CPUs each, hyperthreads interleaved as on the default profile's workers.
LAYOUT = {0: (0, 1, 4, 5), 1: (2, 3, 6, 7)}
MACHINE = MachineInfo(tuple(NUMANodeInfo(n, cpus, (10, 21), 8 * GI) for n, cpus in LAYOUT.items()))


def cpu_state(
    entries: Mapping[str, Mapping[str, str]], policy: str = "static", default: str = "0-7"
) -> bytes:
    return encode_cpu_manager_checkpoint(policy, default, entries)


def memory_state(
    reserved: Mapping[tuple[int, str], int] | None = None,
    entries: checkpoints.Assignments | None = None,
    policy: str = "Static",
) -> bytes:
    reserved = reserved or {}
    machine = {
        n: NUMANodeState(
            1 if any(k[0] == n for k in reserved) else 0,
            {
                "memory": MemoryTable(8 * GI, GI, 7 * GI, reserved.get((n, "memory"), 0)),
                "hugepages-2Mi": MemoryTable(GI, 0, GI, reserved.get((n, "hugepages-2Mi"), 0)),
            },
            [n],
        )
        for n in LAYOUT
    }
    if policy == "None":
        machine = {}
    return MemoryManagerCheckpoint(policy, machine, entries or {}).to_json().encode()


GU_POD_MEMORY = {"uid-1": {"app": [Block((0,), "memory", GI), Block((0,), "hugepages-2Mi", 64 * MI)]}}


def write_sysfs(root: Path, layout: Mapping[int, tuple[int, ...]] = LAYOUT) -> Path:
    """The minimum of a sysfs tree that ``read_machine`` accepts."""
    nodes = root / "devices/system/node"
    for numa, cpus in layout.items():
        node = nodes / f"node{numa}"
        node.mkdir(parents=True)
        for cpu in cpus:
            (node / f"cpu{cpu}").mkdir()
        (node / "meminfo").write_text(f"Node {numa} MemTotal:       8388608 kB\n")
        (node / "distance").write_text(" ".join("10" if j == numa else "21" for j in layout) + "\n")
    return root


# ----------------------------------------------------------------------------- shared format


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        pytest.param(
            b'{"policyName":"none","defaultCpuSet":"4-6","checksum":1}',
            CorruptCheckpointError,
            "checkpoint is corrupted",
            id="cpu-bad-checksum",
        ),
        pytest.param(
            b'{"policyName":"none"', CheckpointError, "could not parse checkpoint", id="cpu-truncated"
        ),
        pytest.param(b"[1]", CheckpointError, "not a JSON object", id="cpu-not-an-object"),
        pytest.param(
            b'{"policyName":7,"checksum":0}', CheckpointError, "must be strings", id="cpu-policy-type"
        ),
        pytest.param(
            b'{"policyName":"none","checksum":-1}', CheckpointError, "uint32", id="cpu-negative-checksum"
        ),
        pytest.param(b"\xff\xfe\x00", CheckpointError, "could not parse checkpoint", id="cpu-not-utf8"),
    ],
)
def test_cpu_checkpoint_errors(text: bytes, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        checkpoints.decode_cpu_manager_checkpoint(text)


def test_cpu_checkpoint_zero_checksum_is_accepted_unverified_and_keys_match_case_insensitively() -> None:
    decoded = checkpoints.decode_cpu_manager_checkpoint(
        b'{"POLICYNAME":"static","defaultcpuset":"0-3","Entries":{"p":{"c":"4"}},"checksum":0}'
    )
    assert (decoded.policy_name, decoded.default_cpuset, decoded.entries) == (
        "static",
        "0-3",
        {"p": {"c": "4"}},
    )


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        pytest.param(
            lambda o: o["machineState"]["0"].update(memoryMap=[]),
            r"machineState\[0\]\.memoryMap must be an object",
            id="memory-map-not-object",
        ),
        pytest.param(
            lambda o: o["machineState"]["0"]["memoryMap"]["memory"].update(total=-1),
            r"memoryMap\[memory\]\.total must be a uint64",
            id="negative-total",
        ),
        pytest.param(
            lambda o: o["machineState"]["0"]["memoryMap"]["memory"].update(free=1.5),
            r"\.free must be a uint64",
            id="fractional-free",
        ),
        pytest.param(lambda o: o["machineState"].update(x={}), "'x' is not a NUMA node id", id="numa-key"),
        pytest.param(
            lambda o: o["machineState"]["1"].update(cells=["a"]),
            r"machineState\[1\]\.cells must be a list of integers",
            id="cells",
        ),
        pytest.param(
            lambda o: o["entries"]["uid-1"].update(app={}),
            r"entries\[uid-1\]\[app\] must be a list",
            id="blocks-not-list",
        ),
        pytest.param(
            lambda o: o["entries"]["uid-1"]["app"][0].update(size="1Gi"),
            r"entries\[uid-1\]\[app\]\[0\]\.size must be a uint64",
            id="size-string",
        ),
        pytest.param(
            lambda o: o.update(policyName=None, checksum=True),
            "checksum must be a uint32",
            id="checksum-bool",
        ),
    ],
)
def test_memory_checkpoint_errors_name_the_field(mutate: object, message: str) -> None:
    obj = json.loads(memory_state({(0, "memory"): GI}, GU_POD_MEMORY))
    assert callable(mutate)
    mutate(obj)
    with pytest.raises(CheckpointError, match=message):
        MemoryManagerCheckpoint.from_json(json.dumps(obj))


def test_memory_checkpoint_round_trips_with_its_checksum() -> None:
    data = memory_state({(0, "memory"): GI}, GU_POD_MEMORY)
    parsed = MemoryManagerCheckpoint.from_json(data)
    assert parsed.to_json().encode() == data
    assert parsed.entries == GU_POD_MEMORY


# ----------------------------------------------------------------------------- CPU figures


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param(cpu_state({}), set(), id="no-entries"),
        pytest.param(cpu_state({}, policy="none", default=""), set(), id="policy-none"),
        pytest.param(cpu_state({"p1": {"a": "1,5"}, "p2": {"b": "2-3"}}), {1, 2, 3, 5}, id="two-pods"),
        pytest.param(
            cpu_state({"p1": {"init": "1,5", "app": "1,5"}}), {1, 5}, id="init-cpus-reused-count-once"
        ),
        pytest.param(cpu_state({"p1": {"a": ""}}), set(), id="empty-cpuset"),
        pytest.param(
            b'{"policyName":"static","defaultCpuSet":"0","entries":{"p":{"c":"6-7"}},"checksum":0}',
            {6, 7},
            id="zero-checksum-unverified",
        ),
    ],
)
def test_exclusive_cpus(data: bytes, expected: set[int]) -> None:
    assert exclusive_cpus(data) == expected


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(cpu_state({"p": {"c": "1"}})[:-7], "could not parse checkpoint", id="truncated"),
        pytest.param(b"", "could not parse checkpoint", id="empty-file"),
        pytest.param(
            cpu_state({"p": {"c": "1"}}).replace(b'"1"', b'"2"'),
            "checkpoint is corrupted",
            id="edited-without-checksum",
        ),
        pytest.param(
            cpu_state({}, policy="dynamic"), "unknown CPU manager policy 'dynamic'", id="unknown-policy"
        ),
        pytest.param(
            cpu_state({"p": {"c": "3-1"}}),
            "could not parse cpuset '3-1' for container 'c' in pod 'p'",
            id="bad-range",
        ),
        pytest.param(
            cpu_state({"p": {"c": "0-99999999999"}}),
            "CPU id 99999999999 is larger than 65535",
            id="huge-range-not-expanded",
        ),
        pytest.param(
            b'{"policyName":"static","entries":{"c1":"4-6"},"checksum":0}', "entries must map", id="v1-format"
        ),
    ],
)
def test_exclusive_cpus_rejects(data: bytes, message: str) -> None:
    with pytest.raises(NUMAInfoError, match=message):
        exclusive_cpus(data)


def test_unmapped_cpus() -> None:
    assert unmapped_cpus({1, 9, 8, 2}, MACHINE) == (8, 9)


# ----------------------------------------------------------------------------- memory figures


@pytest.mark.parametrize(
    ("data", "capacity", "allocation", "assigned"),
    [
        pytest.param(
            memory_state(),
            {(0, "memory"): 8 * GI, (1, "hugepages-2Mi"): GI},
            {(0, "memory"): 0},
            False,
            id="static-nothing-assigned",
        ),
        pytest.param(
            memory_state({(0, "memory"): GI, (0, "hugepages-2Mi"): 64 * MI}, GU_POD_MEMORY),
            {(0, "memory"): 8 * GI},
            {(0, "memory"): GI, (0, "hugepages-2Mi"): 64 * MI, (1, "memory"): 0},
            True,
            id="one-pod-on-node-0",
        ),
        pytest.param(
            memory_state(
                {(0, "memory"): 3 * GI, (1, "memory"): 3 * GI},
                {"u": {"c": [Block((0, 1), "memory", 6 * GI)]}},
            ),
            {},
            {(0, "memory"): 3 * GI, (1, "memory"): 3 * GI},
            True,
            id="cross-numa-block-split-by-reserved",
        ),
        pytest.param(
            memory_state(entries={"u": {"c": []}}), {}, {}, False, id="empty-block-list-is-no-allocation"
        ),
    ],
)
def test_memory_figures(
    data: bytes, capacity: dict[tuple[int, str], int], allocation: dict[tuple[int, str], int], assigned: bool
) -> None:
    figures = memory_figures(data)
    assert capacity.items() <= figures.capacity.items()
    assert allocation.items() <= figures.allocation.items()
    assert figures.has_assignments is assigned


def test_memory_policy_none_has_no_figures() -> None:
    assert memory_figures(memory_state(policy="None")) == MemoryFigures()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(memory_state()[:100], "could not parse checkpoint", id="truncated"),
        pytest.param(
            memory_state().replace(b'"total":8589934592', b'"total":8589934593', 1),
            "checkpoint is corrupted",
            id="edited-without-checksum",
        ),
        pytest.param(
            memory_state(policy="Dynamic"), "unknown memory manager policy 'Dynamic'", id="unknown-policy"
        ),
        pytest.param(
            memory_state(policy="static"),
            "unknown memory manager policy 'static'",
            id="policy-is-case-sensitive",
        ),
    ],
)
def test_memory_figures_reject(data: bytes, message: str) -> None:
    with pytest.raises(NUMAInfoError, match=message):
        memory_figures(data)


# ----------------------------------------------------------------------------- samples


def by_labels(found: list[Sample], name: str) -> dict[tuple[str, ...], float]:
    return {tuple(v for _, v in s.labels[1:]): s.value for s in found if s.name == name}


@pytest.mark.parametrize(
    ("snapshot", "cores", "valid"),
    [
        pytest.param(
            Snapshot("n", MACHINE, frozenset()),
            {("node00", "capacity"): 4, ("node01", "capacity"): 4},
            {("cpu_manager_state",): 1, ("memory_manager_state",): 0},
            id="no-allocation-no-allocation-samples",
        ),
        pytest.param(
            Snapshot("n", MACHINE, frozenset({1, 5, 6})),
            {
                ("node00", "capacity"): 4,
                ("node00", "allocation"): 2,
                ("node01", "capacity"): 4,
                ("node01", "allocation"): 1,
            },
            {("cpu_manager_state",): 1, ("memory_manager_state",): 0},
            id="allocation-on-both-nodes",
        ),
        pytest.param(
            Snapshot("n", MACHINE, frozenset({4})),
            {
                ("node00", "capacity"): 4,
                ("node00", "allocation"): 1,
                ("node01", "capacity"): 4,
                ("node01", "allocation"): 0,
            },
            {("cpu_manager_state",): 1, ("memory_manager_state",): 0},
            id="zero-allocation-reported-once-one-exists",
        ),
        pytest.param(
            Snapshot("n", MACHINE, frozenset({42})),
            {("node00", "capacity"): 4, ("node01", "capacity"): 4},
            {("cpu_manager_state",): 1, ("memory_manager_state",): 0},
            id="unknown-cpus-not-counted",
        ),
        pytest.param(
            Snapshot("n", MACHINE, None),
            {("node00", "capacity"): 4, ("node01", "capacity"): 4},
            {("cpu_manager_state",): 0, ("memory_manager_state",): 0},
            id="unusable-checkpoint-keeps-capacity",
        ),
        pytest.param(
            Snapshot("n", None, frozenset({1}), MemoryFigures()),
            {},
            {("cpu_manager_state",): 1, ("memory_manager_state",): 1},
            id="no-sysfs-no-cpu-figures",
        ),
    ],
)
def test_cpu_samples(snapshot: Snapshot, cores: dict, valid: dict) -> None:
    found = samples(snapshot)
    assert by_labels(found, numainfo.CORE_COUNT) == cores
    assert by_labels(found, numainfo.CHECKPOINT_VALID) == valid
    assert by_labels(found, numainfo.NODE_COUNT) == ({(): 2} if snapshot.machine else {})
    assert all(s.labels[0] == ("node", "n") for s in found)


@pytest.mark.parametrize(
    ("figures", "expected"),
    [
        pytest.param(
            MemoryFigures({(0, "memory"): 8 * GI, (1, "hugepages-2Mi"): GI}, {(0, "memory"): 0}),
            {("node00", "memory", "capacity"): 8 * GI, ("node01", "hugepages-2Mi", "capacity"): GI},
            id="no-assignment-capacity-only",
        ),
        pytest.param(
            MemoryFigures({(0, "memory"): 8 * GI, (1, "memory"): 8 * GI}, {(0, "memory"): GI}, True),
            {
                ("node00", "memory", "capacity"): 8 * GI,
                ("node00", "memory", "allocation"): GI,
                ("node01", "memory", "capacity"): 8 * GI,
                ("node01", "memory", "allocation"): 0,
            },
            id="assignment-reports-every-node",
        ),
        pytest.param(MemoryFigures(), {}, id="policy-none"),
    ],
)
def test_memory_samples(figures: MemoryFigures, expected: dict) -> None:
    assert by_labels(samples(Snapshot("n", None, None, figures)), numainfo.MEMORY_BYTES) == expected


@pytest.mark.parametrize(("numa", "label"), [(0, "node00"), (7, "node07"), (12, "node12"), (123, "node123")])
def test_numa_label_is_upstreams(numa: int, label: str) -> None:
    assert numainfo.numa_label(numa) == label


# ----------------------------------------------------------------------------- collector


def scrape(collector: NUMAInfoCollector) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    registry = CollectorRegistry(auto_describe=True)
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {
        family.name: {tuple(sorted(s.labels.items())): s.value for s in family.samples}
        for family in text_string_to_metric_families(text)
    }


def node_root(tmp: Path, cpu: bytes | None, memory: bytes | None) -> tuple[Path, Path]:
    sysfs = write_sysfs(tmp / "sys")
    state = tmp / "kubelet"
    state.mkdir()
    if cpu is not None:
        (state / "cpu_manager_state").write_bytes(cpu)
    if memory is not None:
        (state / "memory_manager_state").write_bytes(memory)
    return sysfs, state


def core(numa: str, kind: str) -> tuple[tuple[str, str], ...]:
    return (("node", "w"), ("numanode", numa), ("type", kind))


def test_collector_reads_the_files_on_every_scrape(tmp_path: Path) -> None:
    sysfs, state = node_root(tmp_path, cpu_state({}), memory_state())
    collector = NUMAInfoCollector("w", sysfs, state)
    first = scrape(collector)
    assert first["numainfo_node_count"] == {(("node", "w"),): 2}
    assert first["numainfo_core_count"] == {core("node00", "capacity"): 4, core("node01", "capacity"): 4}
    (state / "cpu_manager_state").write_bytes(cpu_state({"p": {"c": "2-3"}}))
    (state / "memory_manager_state").write_bytes(memory_state({(0, "memory"): GI}, GU_POD_MEMORY))
    second = scrape(collector)
    assert second["numainfo_core_count"][core("node01", "allocation")] == 2
    assert second["numainfo_core_count"][core("node00", "allocation")] == 0
    mem = (("node", "w"), ("numanode", "node00"), ("resource", "memory"), ("type", "allocation"))
    assert second["numainfo_memory_bytes"][mem] == GI
    version = next(iter(second["numainfo_version"]))
    assert ("version", "1") in version


def test_collector_warns_once_per_problem_and_recovers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = cpu_state({"p": {"c": "2-3"}})
    sysfs, state = node_root(tmp_path, good[:20], memory_state())
    now = [0.0]
    collector = NUMAInfoCollector("w", sysfs, state, clock=lambda: now[0])
    caplog.set_level(logging.INFO, logger="nrop.rte.numainfoexporter")
    for _ in range(3):
        found = scrape(collector)
        assert core("node01", "allocation") not in found["numainfo_core_count"]
        assert found["numainfo_checkpoint_valid"][(("checkpoint", "cpu_manager_state"), ("node", "w"))] == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert f"cannot use {state / 'cpu_manager_state'}" in warnings[0]
    assert "could not parse checkpoint" in warnings[0]
    now[0] = 31.0  # past the reminder interval
    scrape(collector)
    assert sum(r.levelno == logging.WARNING for r in caplog.records) == 2
    (state / "cpu_manager_state").write_bytes(good)
    assert scrape(collector)["numainfo_core_count"][core("node01", "allocation")] == 2
    assert any("recovered after 4 failed attempts" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        pytest.param(lambda state: None, "No such file or directory", id="missing"),
        pytest.param(lambda state: (state / "cpu_manager_state").mkdir(), "Is a directory", id="a-directory"),
        pytest.param(
            lambda state: os.mkfifo(state / "cpu_manager_state"),
            "not a regular file",
            id="a-fifo-never-blocks",
        ),
        pytest.param(
            lambda state: (state / "cpu_manager_state").symlink_to("/dev/zero"),
            "not a regular file",
            id="a-device",
        ),
    ],
)
def test_unreadable_checkpoint_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, prepare: object, message: str
) -> None:
    sysfs, state = node_root(tmp_path, None, memory_state())
    assert callable(prepare)
    prepare(state)
    found = scrape(NUMAInfoCollector("w", sysfs, state))
    assert found["numainfo_core_count"] == {core("node00", "capacity"): 4, core("node01", "capacity"): 4}
    assert any(message in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_oversized_checkpoint_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cpu_manager_state"
    path.write_bytes(b" " * 11)
    monkeypatch.setattr("nrop.rte.numainfoexporter.MAX_CHECKPOINT_BYTES", 10)
    with pytest.raises(NUMAInfoError, match="larger than 10 bytes"):
        read_checkpoint(path)


def test_broken_sysfs_keeps_memory_figures(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    state = tmp_path / "kubelet"
    state.mkdir()
    (state / "cpu_manager_state").write_bytes(cpu_state({"p": {"c": "1"}}))
    (state / "memory_manager_state").write_bytes(memory_state())
    found = scrape(NUMAInfoCollector("w", tmp_path / "no-sys", state))
    assert "numainfo_core_count" not in found
    assert "numainfo_memory_bytes" in found
    assert any("cannot read the NUMA topology" in r.getMessage() for r in caplog.records)


def test_cpus_on_no_numa_node_are_warned_about(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    sysfs, state = node_root(tmp_path, cpu_state({"p": {"c": "1,40-41"}}), memory_state())
    found = scrape(NUMAInfoCollector("w", sysfs, state))
    assert found["numainfo_core_count"][core("node00", "allocation")] == 1
    assert any("on no NUMA node" in r.getMessage() and "40,41" in r.getMessage() for r in caplog.records)


# ----------------------------------------------------------------------------- fuzzing

VALID_CPU = cpu_state({"uid-1": {"app": "1,5", "init": "1,5"}, "uid-2": {"c": "2-3"}})
VALID_MEMORY = memory_state({(0, "memory"): GI, (0, "hugepages-2Mi"): 64 * MI}, GU_POD_MEMORY)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**65), max_value=2**65)
    | st.floats()
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


def _paths(obj: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for key, value in obj.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            out += _paths(value, (*prefix, index))
    return out


@st.composite
def corrupted(draw: st.DrawFn, valid: bytes) -> bytes:
    """``valid`` damaged the ways a crash, a disk or a person damages a file."""
    how = draw(st.sampled_from(["truncate", "flip", "insert", "replace-value", "garbage"]))
    if how == "truncate":
        return valid[: draw(st.integers(0, len(valid) - 1))]
    if how == "flip":
        index = draw(st.integers(0, len(valid) - 1))
        return valid[:index] + bytes([draw(st.integers(0, 255))]) + valid[index + 1 :]
    if how == "insert":
        index = draw(st.integers(0, len(valid)))
        return valid[:index] + draw(st.binary(min_size=1, max_size=8)) + valid[index:]
    if how == "replace-value":
        obj = json.loads(valid)
        path = draw(st.sampled_from(_paths(obj)[1:]))
        target = obj
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = draw(JSON_VALUES)
        return json.dumps(obj).encode()
    return draw(st.binary(max_size=64))


@settings(max_examples=300, deadline=None)
@given(data=corrupted(VALID_CPU))
def test_fuzz_cpu_checkpoint_yields_error_or_the_original(data: bytes) -> None:
    try:
        result = exclusive_cpus(data)
    except NUMAInfoError:
        return
    if len(data) < len(VALID_CPU) and VALID_CPU.startswith(data):
        pytest.fail(f"a truncated checkpoint was accepted: {data!r}")
    decoded = json.loads(data)
    checksum = next((v for k, v in decoded.items() if k.lower() == "checksum"), 0)
    if checksum != 0:  # a verified checksum: the content is the original one
        assert result == exclusive_cpus(VALID_CPU)


@settings(max_examples=300, deadline=None)
@given(data=corrupted(VALID_MEMORY))
def test_fuzz_memory_checkpoint_yields_error_or_the_original(data: bytes) -> None:
    try:
        result = memory_figures(data)
    except NUMAInfoError:
        return
    assert not (len(data) < len(VALID_MEMORY) and VALID_MEMORY.startswith(data))
    assert result == memory_figures(VALID_MEMORY)  # the memory manager never skips its checksum


def _fingerprint(directory: Path) -> dict[str, tuple[bytes, int, int]]:
    return {
        p.name: (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_mode) for p in sorted(directory.iterdir())
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cpu=corrupted(VALID_CPU), memory=corrupted(VALID_MEMORY))
def test_fuzz_collector_never_raises_and_never_writes(cpu: bytes, memory: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sysfs, state = node_root(Path(tmp), cpu, memory)
        before = _fingerprint(state)
        found = scrape(NUMAInfoCollector("w", sysfs, state))
        assert _fingerprint(state) == before
        assert found["numainfo_core_count"][core("node00", "capacity")] == 4
        valid = found["numainfo_checkpoint_valid"]
        assert valid[(("checkpoint", "memory_manager_state"), ("node", "w"))] == (
            1 if "numainfo_memory_bytes" in found else 0
        )


# ----------------------------------------------------------------------------- command line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(":19091", ("0.0.0.0", 19091), id="upstream-default"),
        pytest.param("127.0.0.1:0", ("127.0.0.1", 0), id="free-port"),
        pytest.param("[::1]:8080", ("::1", 8080), id="ipv6"),
        pytest.param("localhost:65535", ("localhost", 65535), id="hostname"),
    ],
)
def test_parse_listen_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen_address(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("19091", "missing port", id="no-colon"),
        pytest.param("::1:80", "too many colons", id="ipv6-without-brackets"),
        pytest.param("host:http", "invalid port 'http'", id="named-port"),
        pytest.param("host:70000", "invalid port", id="port-too-big"),
        pytest.param("host:", "invalid port ''", id="empty-port"),
    ],
)
def test_parse_listen_address_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_listen_address(text)


def test_help_documents_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    text = " ".join(out.split())  # argparse wraps to the terminal width
    for flag in (
        "-c FILE, --cert-file FILE",
        "-k FILE, --key-file FILE",
        "-L [HOST]:PORT, --listen-address [HOST]:PORT",
        "-M, --dump-metrics",
        "-N NAME, --node-name NAME",
        "-Y DIR, --sysfs DIR",
        "-K DIR, --kube-state DIR",
        "$NUMAINFO_NODENAME",
        "(default: :19091)",
        "(default: /var/lib/kubelet)",
        "(default: /sys)",
    ):
        assert flag in text, flag


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["-c", "cert.pem"], "--cert-file and --key-file must be given together", id="cert-only"),
        pytest.param(
            ["--key-file", "key.pem"], "--cert-file and --key-file must be given together", id="key-only"
        ),
        pytest.param(["-L", "19091"], "--listen-address: address 19091: missing port", id="bad-address"),
        pytest.param(["--bogus"], "unrecognized arguments: --bogus", id="unknown-flag"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "env", "expected"),
    [
        pytest.param(["-N", "from-flag"], "from-env", "from-flag", id="flag-wins"),
        pytest.param([], "from-env", "from-env", id="env-next"),
        pytest.param([], "", os.uname().nodename, id="hostname-last"),
    ],
)
def test_dump_metrics_prints_once_with_the_node_name(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    flag: list[str],
    env: str,
    expected: str,
) -> None:
    sysfs, state = node_root(tmp_path, cpu_state({"p": {"c": "0-1"}}), memory_state())
    monkeypatch.setenv("NUMAINFO_NODENAME", env)
    assert main([*flag, "-M", "-Y", str(sysfs), "--kube-state", str(state)]) == 0
    out = capsys.readouterr().out
    assert f'numainfo_core_count{{node="{expected}",numanode="node00",type="allocation"}} 2.0' in out
