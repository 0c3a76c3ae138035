"""Bad input never crashes the exporters and is never written: corrupt kubelet files and sysfs trees.

Owns the input fuzzing of the reliability issue (its bad-input part). One node root in a
temporary directory holds what the two exporters read from a node: a sysfs tree
(``sys/devices/system/{node,cpu}``: NUMA nodes, their CPUs and ``online`` files, ``cpulist``,
``meminfo``, ``distance``, hugepages) and the kubelet's directory (``var/lib/kubelet``:
``cpu_manager_state``, ``memory_manager_state`` and the ``config.yaml`` the exporter reads
``reservedSystemCPUs`` and the topology manager settings from). Hypothesis corrupts one of
them per case, derandomized and without a database so that CI sees the same cases every time:
truncated JSON, empty files, a wrong checksum, wrong JSON types, missing keys, flipped bytes,
random bytes, huge numbers, malformed cpulists (``0-``, ``3-1``, ``a``, ids past any machine),
non-text bytes, JSON nested 200,000 deep, YAML alias bombs, and files that are missing,
directories, FIFOs or symlinks; in sysfs, missing files and directories of a NUMA node. The
four fuzzing tests run :data:`EXAMPLES` cases, 10,000 in all, in about a minute.

Each case drives the entry point the daemon calls, then checks what a user would see:

* **numainfo exporter** (it reads the checkpoints and sysfs on every scrape): a Prometheus
  scrape through :meth:`~nrop.rte.numainfoexporter.NUMAInfoCollector.collect` never raises and
  never logs an error; a file it cannot use is named in a WARNING, its
  ``numainfo_checkpoint_valid`` is 0 (or the CPU figures are absent for sysfs) while the other
  sources still report; a damaged file it accepts gives exactly the undamaged figures (the
  checksum covers the content). Then the file is fixed and the next scrape, the retry, reports
  the original figures and logs that the file recovered.
* **resource-topology-exporter** (it reads sysfs and the kubelet configuration when it starts,
  then only the podresources API): :func:`~nrop.rte.sysinfo.read_machine` and
  :func:`~nrop.rte.config.resolve_topology_manager`, the calls ``main`` makes, return or raise
  only the errors ``main`` turns into a one-line message naming the file (exit 1 and 2, as
  upstream's exporter, so that the kubelet restarts it: its retry); ``main`` itself is run on a
  table of such inputs. On the same sysfs tree both exporters accept or both refuse.
* **never a write**: every file and directory of the node root keeps its bytes, mode, inode
  and mtime (mtimes are set in the past first, so that even a coarse clock would show a write),
  and nothing is added or removed.

A live case runs ``numainfo-exporter`` as its own process against the node root: corrupt
checkpoints and a corrupt sysfs file are warned about while the process keeps serving, and the
correct figures come back once the files are fixed.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from nrop.api import checkpoints
from nrop.api.checkpoints import (
    Block,
    MemoryManagerCheckpoint,
    MemoryTable,
    NUMANodeState,
    encode_cpu_manager_checkpoint,
)
from nrop.rte import config as rteconfig
from nrop.rte import main as rtemain
from nrop.rte.numainfoexporter import NUMAInfoCollector
from nrop.rte.sysinfo import SysinfoError, read_machine

pytestmark = pytest.mark.slow

GI: Final = 1024**3
NODE: Final = "worker-0"
#: Two NUMA nodes of four CPUs, hyperthreads interleaved as on the default profile's workers.
LAYOUT: Final = {0: (0, 1, 4, 5), 1: (2, 3, 6, 7)}
#: Every file of the node root gets this mtime before a case: a write would move it to "now".
PAST_NS: Final = 1_000_000_000 * 1_000_000_000
#: Cases per fuzzing test; together at least the issue's 10,000.
EXAMPLES: Final = {"cpu": 2300, "memory": 2300, "sysfs": 2700, "kubelet-config": 2700}
SETTINGS: Final = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    # No shrinking: a failing case is reported as generated (shrinking 5000-digit inputs takes minutes).
    "phases": (Phase.explicit, Phase.generate),
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}

#: cpulists no kernel writes; each must be refused wherever a cpulist is parsed.
MALFORMED_CPULISTS: Final = (
    "0-",
    "-1",
    "3-1",
    "a",
    "1-a",
    "1,,2",
    ",",
    "-",
    "1-2-3",
    "0x1",
    "1.5",
    "1 2",
    "\u0663",  # ARABIC-INDIC DIGIT THREE: a digit to str.isdigit, not to the kernel
    "65536",
    "4294967296",
    "0-99999999999",
    "1" * 5000,
    "0-" + "9" * 5000,
)


# ----------------------------------------------------------------------------- the node root


def cpu_checkpoint() -> bytes:
    entries = {"pod-a": {"app": "4-5", "init": "4-5"}, "pod-b": {"app": "2-3"}}
    return encode_cpu_manager_checkpoint("static", "0-1,6-7", entries)


def memory_checkpoint(**table: int) -> bytes:
    def tables(reserved: int) -> dict[str, MemoryTable]:
        memory = {"total": 8 * GI, "system_reserved": GI, "allocatable": 7 * GI, "reserved": reserved}
        memory.update(table)
        memory["free"] = memory["allocatable"] - memory["reserved"]
        return {"memory": MemoryTable(**memory), "hugepages-2Mi": MemoryTable(GI, 0, GI, 0, GI)}

    machine = {0: NUMANodeState(1, tables(GI), [0]), 1: NUMANodeState(0, tables(0), [1])}
    entries = {"pod-a": {"app": [Block((0,), "memory", GI)]}}
    return MemoryManagerCheckpoint("Static", machine, entries).to_json().encode()


KUBELET_CONFIG: Final = (
    b"apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
    b"cpuManagerPolicy: static\nmemoryManagerPolicy: Static\nreservedSystemCPUs: 0,2\n"
    b"topologyManagerPolicy: single-numa-node\ntopologyManagerScope: container\n"
)


def sysfs_files() -> dict[str, bytes | None]:
    """Relative path below ``sys`` → content, ``None`` for a directory (parents are implied)."""
    files: dict[str, bytes | None] = {
        "devices/system/cpu/online": b"0-7\n",
        "devices/system/cpu/possible": b"0-7\n",
    }
    for numa, cpus in LAYOUT.items():
        node = f"devices/system/node/node{numa}"
        for cpu in cpus:
            files[f"{node}/cpu{cpu}"] = None
            if cpu:  # as on real hardware, cpu0 has no online file
                files[f"{node}/cpu{cpu}/online"] = b"1\n"
        files[f"{node}/cpulist"] = ",".join(map(str, cpus)).encode() + b"\n"
        files[f"{node}/meminfo"] = (
            f"Node {numa} MemTotal:        8388608 kB\nNode {numa} MemFree:         4194304 kB\n"
            f"Node {numa} HugePages_Total:   512\n"
        ).encode()
        files[f"{node}/distance"] = (" ".join("10" if j == numa else "21" for j in LAYOUT) + "\n").encode()
        files[f"{node}/hugepages/hugepages-2048kB/nr_hugepages"] = b"512\n"
    return files


#: The node root's entries (relative path → bytes, ``None`` for a directory), parents first.
PRISTINE: Final[dict[str, bytes | None]] = {
    **{f"sys/{rel}": data for rel, data in sysfs_files().items()},
    f"var/lib/kubelet/{checkpoints.CPU_MANAGER_STATE_FILE}": cpu_checkpoint(),
    f"var/lib/kubelet/{checkpoints.MEMORY_MANAGER_STATE_FILE}": memory_checkpoint(),
    "var/lib/kubelet/config.yaml": KUBELET_CONFIG,
}
#: Files of the node root that are the test's own, not the node's.
_OWN_FILES: Final = ("rte.yaml", "numainfo.log")


@dataclass
class NodeRoot:
    """The files of one node, the exporters pointed at them, and the scrape the pristine node gives."""

    root: Path
    collector: NUMAInfoCollector
    cfg: rteconfig.Config
    reference: dict[tuple[str, tuple[tuple[str, str], ...]], float] = field(default_factory=dict)

    @property
    def sysfs(self) -> Path:
        return self.root / "sys"

    @property
    def kubelet(self) -> Path:
        return self.root / "var/lib/kubelet"


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _age(path: Path | str) -> None:
    os.utime(path, ns=(PAST_NS, PAST_NS), follow_symlinks=False)


def repair(node: NodeRoot, target: str) -> None:
    """Undo a corruption of ``target``: its pristine content (a whole subtree for a directory), aged."""
    path = node.root / target
    _remove(path)
    touched = {path.parent}
    for rel, data in PRISTINE.items():
        if rel != target and not rel.startswith(target + "/"):
            continue
        entry = node.root / rel
        entry.parent.mkdir(parents=True, exist_ok=True)
        if data is None:
            entry.mkdir(exist_ok=True)
            touched.add(entry)
        else:
            entry.write_bytes(data)
            _age(entry)
        touched.update(p for p in entry.parents if path.parent in p.parents)
    for directory in touched:
        _age(directory)


def restore(node: NodeRoot) -> None:
    """Put back every pristine file and directory, all aged, and remove anything else."""
    keep = {str(node.root / rel) for rel in (*PRISTINE, *_OWN_FILES)}
    keep |= {str(p) for rel in PRISTINE for p in (node.root / rel).parents if node.root in p.parents}
    for directory, dirs, files in os.walk(node.root):
        for name in [*dirs, *files]:
            if os.path.join(directory, name) not in keep:
                _remove(Path(directory, name))
        dirs[:] = [d for d in dirs if os.path.join(directory, d) in keep]
    for rel in PRISTINE:
        if rel.count("/") == 0 or (node.root / rel).exists():
            continue
        repair(node, rel)
    for rel, data in PRISTINE.items():
        path = node.root / rel
        if data is not None and (path.is_symlink() or not path.is_file() or path.read_bytes() != data):
            repair(node, rel)
    for directory, _dirs, files in os.walk(node.root):
        for name in files:
            _age(os.path.join(directory, name))
        _age(directory)


def fingerprint(root: Path | str) -> dict[str, tuple[Any, ...]]:
    """Every entry below ``root``: mode, inode, mtime and, for regular files, the bytes."""
    found: dict[str, tuple[Any, ...]] = {}
    with os.scandir(root) as entries:
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            content: Any = b""
            if entry.is_symlink():
                content = os.readlink(entry.path)
            elif entry.is_dir(follow_symlinks=False):
                content = fingerprint(entry.path)
            elif entry.is_file(follow_symlinks=False):  # never open a FIFO: it would block
                with open(entry.path, "rb") as file:
                    content = file.read()
            found[entry.name] = (info.st_mode, info.st_ino, info.st_mtime_ns, content)
    return found


Scrape = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(collector: NUMAInfoCollector) -> Scrape:
    """What Prometheus gets from one scrape (``collect`` is what its registry calls)."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in collector.collect()
        for sample in family.samples
    }


def valid_key(checkpoint: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return ("numainfo_checkpoint_valid", (("checkpoint", checkpoint), ("node", NODE)))


def has_cpu_figures(found: Scrape) -> bool:
    return any(name == "numainfo_core_count" for name, _ in found)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> NodeRoot:
    root = tmp_path_factory.mktemp("node").resolve()
    kubelet = root / "var/lib/kubelet"
    (root / "rte.yaml").write_text("{}\n")
    cfg, _ = rteconfig.load(
        [
            "--config",
            str(root / "rte.yaml"),
            "--sysfs",
            str(root / "sys"),
            "--kubelet-config-file",
            str(kubelet / "config.yaml"),
            "--no-publish",
            "--podreadiness=false",
            "--hostname",
            NODE,
        ],
        {},
    )
    node = NodeRoot(root, NUMAInfoCollector(NODE, root / "sys", kubelet), cfg)
    restore(node)
    node.reference = scrape(node.collector)
    # The pristine node is fully described: both checkpoints valid, CPU and memory figures, allocations.
    assert node.reference[valid_key(checkpoints.CPU_MANAGER_STATE_FILE)] == 1
    assert node.reference[valid_key(checkpoints.MEMORY_MANAGER_STATE_FILE)] == 1
    assert node.reference["numainfo_node_count", (("node", NODE),)] == 2
    allocation = ("numainfo_core_count", (("node", NODE), ("numanode", "node01"), ("type", "allocation")))
    assert node.reference[allocation] == 2
    return node


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def at(self, level: int) -> list[str]:
        return [r.getMessage() for r in self.records if r.levelno == level]

    def problems(self) -> list[str]:
        return [
            f"{r.levelname} {r.getMessage()}"
            for r in self.records
            if r.levelno >= logging.ERROR or r.exc_info
        ]


@contextmanager
def logged() -> Iterator[Records]:
    """Everything the exporters log (both log below ``nrop.rte``), INFO and up."""
    logger = logging.getLogger("nrop.rte")
    handler, level = Records(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


# ----------------------------------------------------------------------------- corruptions

#: What replaces a file: bytes, or one of these kinds of non-file.
MISSING, DIRECTORY, FIFO, DEVICE, DANGLING, LOOP = (
    "missing",
    "directory",
    "fifo",
    "symlink-to-device",
    "dangling-symlink",
    "symlink-loop",
)


@dataclass(frozen=True)
class Corruption:
    """One damaged file; ``expect`` is ``reject``, ``accept`` or ``either`` (the universal oracle)."""

    how: str
    target: str
    content: bytes | str
    expect: str = "either"

    def __repr__(self) -> str:  # hypothesis prints failing cases: keep 5000-digit numbers readable
        shown = self.content if len(self.content) <= 120 else self.content[:100]
        return f"Corruption({self.how!r}, {self.target!r}, {shown!r}{'...' if shown != self.content else ''}, {self.expect!r})"


def plant(path: Path, content: bytes | str) -> None:
    _remove(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if content == MISSING:
        return
    if content == DIRECTORY:
        path.mkdir()
    elif content == FIFO:
        os.mkfifo(path)
    elif content == DEVICE:
        path.symlink_to("/dev/zero")
    elif content == DANGLING:
        path.symlink_to(path.parent / "no-such-file")
    elif content == LOOP:
        path.symlink_to(path)
    else:
        assert isinstance(content, bytes)
        path.write_bytes(content)
    _age(path)
    _age(path.parent)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for key, value in obj.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            out += _paths(value, (*prefix, index))
    return out


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    _get(obj, path[:-1])[path[-1]] = value
    return obj


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _wrong_types(value: Any) -> st.SearchStrategy[Any]:
    """JSON values of another type than ``value`` (never null, which Go decodes as the zero value)."""
    ints = st.integers(-(2**31), 2**31)
    strings = st.text(max_size=8)
    floats = st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer())
    lists = st.lists(ints | strings, max_size=3)
    dicts = st.dictionaries(strings, ints, max_size=2)
    if isinstance(value, str):
        return ints | floats | st.booleans() | lists | dicts
    if isinstance(value, int):
        return strings | floats | st.booleans() | lists | dicts
    if isinstance(value, list):
        return strings | ints | dicts | st.lists(strings, min_size=1, max_size=2)
    return strings | ints | lists | st.booleans()


#: Bytes that are not UTF-8 (0xFF never occurs in UTF-8), as a disk error or a binary file leaves.
NOT_TEXT: Final = st.tuples(st.binary(max_size=20), st.binary(max_size=20)).map(
    lambda t: t[0] + b"\xff" + t[1]
)
_HUGE_LITERALS: Final = ("1e400", "-1e400", "9" * 5000, "-" + "9" * 5000)
_HUGE_INTS: Final = (2**32, 2**63, 2**64, 2**64 + 1, -1, -(2**63) - 1, 10**30, 10**400)
_NOT_FILES: Final = (MISSING, DIRECTORY, FIFO, DEVICE, DANGLING, LOOP)


@st.composite
def checkpoint_corruptions(draw: st.DrawFn, name: str) -> Corruption:
    valid = cpu_checkpoint() if name == checkpoints.CPU_MANAGER_STATE_FILE else memory_checkpoint()
    obj = json.loads(valid)
    is_cpu = name == checkpoints.CPU_MANAGER_STATE_FILE
    target = f"var/lib/kubelet/{name}"
    hows = [
        "truncated",
        "empty",
        "wrong-checksum",
        "wrong-type",
        "missing-key",
        "huge-number",
        "random-bytes",
    ]
    hows += ["flipped-byte", "inserted-bytes", "not-a-file", "deeply-nested"]
    hows += ["malformed-cpuset"] if is_cpu else ["out-of-range-with-valid-checksum"]
    how = draw(st.sampled_from(hows))
    if how == "truncated":
        return Corruption(how, target, valid[: draw(st.integers(1, len(valid) - 1))], "reject")
    if how == "empty":
        return Corruption(how, target, draw(st.sampled_from([b"", b"\n", b" \t\n", b"\x00"])), "reject")
    if how == "wrong-checksum":
        real = obj["checksum"]
        value = draw(st.integers(1, 2**32 - 1).filter(lambda v: v != real) | st.sampled_from(_HUGE_INTS))
        return Corruption(how, target, _dump(_set(obj, ("checksum",), value)), "reject")
    if how == "wrong-type":
        path = draw(st.sampled_from(_paths(obj)))
        return Corruption(how, target, _dump(_set(obj, path, draw(_wrong_types(_get(obj, path))))), "reject")
    if how == "missing-key":
        path = draw(st.sampled_from([p for p in _paths(obj) if isinstance(_get(obj, p[:-1]), dict)]))
        del _get(obj, path[:-1])[path[-1]]
        return Corruption(how, target, _dump(obj))
    if how == "huge-number":
        path = draw(st.sampled_from([p for p in _paths(obj) if type(_get(obj, p)) is int]))
        literal = draw(st.sampled_from(_HUGE_LITERALS + tuple(map(str, _HUGE_INTS))))
        text = _dump(_set(obj, path, "@HUGE@")).replace(b'"@HUGE@"', literal.encode())
        return Corruption(how, target, text, "reject")
    if how == "random-bytes":
        data = draw(st.binary(max_size=300))
        try:
            parsed = json.loads(data)
        except ValueError:
            parsed = None
        return Corruption(how, target, data, "either" if isinstance(parsed, dict) else "reject")
    if how == "flipped-byte":
        index = draw(st.integers(0, len(valid) - 1))
        byte = draw(st.integers(0, 255).filter(lambda b: b != valid[index]))
        return Corruption(how, target, valid[:index] + bytes([byte]) + valid[index + 1 :])
    if how == "inserted-bytes":
        index = draw(st.integers(0, len(valid)))
        return Corruption(
            how, target, valid[:index] + draw(st.binary(min_size=1, max_size=6)) + valid[index:]
        )
    if how == "not-a-file":
        return Corruption(how, target, draw(st.sampled_from(_NOT_FILES)), "reject")
    if how == "deeply-nested":
        depth = draw(st.integers(1_000, 200_000))
        path = draw(st.sampled_from(_paths(obj)))
        text = _dump(_set(obj, path, "@DEEP@")).replace(b'"@DEEP@"', b"[" * depth + b"]" * depth)
        return Corruption(how, target, text, "reject")
    if how == "malformed-cpuset":
        pod = draw(st.sampled_from(sorted(obj["entries"])))
        container = draw(st.sampled_from(sorted(obj["entries"][pod])))
        obj["entries"][pod][container] = draw(st.sampled_from(MALFORMED_CPULISTS))
        # With the checksum recomputed (a kubelet bug) or zeroed (accepted unverified, as upstream).
        data = encode_cpu_manager_checkpoint(obj["policyName"], obj["defaultCpuSet"], obj["entries"])
        if draw(st.booleans()):
            data = _dump(_set(json.loads(data), ("checksum",), 0))
        return Corruption(how, target, data, "reject")
    # out-of-range-with-valid-checksum: the checksum holds, the value does not fit Go's field.
    field_name = draw(st.sampled_from(["total", "system_reserved", "allocatable", "reserved"]))
    value = draw(st.sampled_from([2**64, 2**64 + 7, 2**70, -1, -(2**63)]))
    return Corruption(how, target, memory_checkpoint(**{field_name: value}), "reject")


#: sysfs files the readers parse, with what they make of a missing file (``accept``: optional).
_SYSFS_FILES: Final = {
    "devices/system/node/node{n}/meminfo": "reject",
    "devices/system/node/node{n}/distance": "reject",
    "devices/system/node/node{n}/hugepages/hugepages-2048kB/nr_hugepages": "reject",
    "devices/system/node/node{n}/cpu{c}/online": "accept",
    "devices/system/cpu/online": "accept",
    # Not read: the CPUs of a node are its cpu<M> entries, as for ghw.
    "devices/system/node/node{n}/cpulist": "accept",
}
#: Directories whose removal leaves a smaller machine (``accept``) or none at all (``reject``).
_SYSFS_DIRS: Final = {
    "devices/system/node": "reject",
    "devices/system/node/node{n}": "accept",
    "devices/system/node/node{n}/cpu{c}": "accept",
    "devices/system/node/node{n}/hugepages": "accept",
    "devices/system/node/node{n}/hugepages/hugepages-2048kB": "accept",
    "devices/system/cpu": "accept",
}


def _sysfs_contents(template: str, original: bytes) -> st.SearchStrategy[tuple[str, bytes, str]]:
    """``(how, content, expect)`` for one sysfs file."""
    ignored = template.endswith("cpulist")
    cpulist = template == "devices/system/cpu/online"
    either = "accept" if ignored else "either"
    strategies = [
        st.tuples(
            st.just("non-text"),
            NOT_TEXT,
            st.just("accept" if ignored else "reject"),
        ),
        st.tuples(st.just("random-text"), st.text(max_size=40).map(str.encode), st.just(either)),
        st.tuples(
            st.just("truncated"),
            st.integers(0, len(original) - 1).map(lambda k: original[:k]),
            st.just(either),
        ),
        st.tuples(
            st.just("malformed-cpulist"),
            st.sampled_from(MALFORMED_CPULISTS).map(str.encode),
            st.just("reject" if cpulist else either),
        ),
    ]
    if template.endswith("meminfo"):
        strategies.append(
            st.tuples(
                st.just("huge-number"),
                st.sampled_from(
                    [
                        (b"Node 0 MemTotal: " + b"9" * 5000 + b" kB\n", "reject"),
                        (b"Node 0 MemTotal: -1 kB\n", "reject"),
                        (b"Node 0 MemTotal: 1e9 kB\n", "reject"),
                        (b"Node 0 MemTotal: 99999999999999999999999 kB\n", "accept"),
                    ]
                ),
            ).map(lambda t: (t[0], *t[1]))
        )
    if template.endswith("distance") or template.endswith("nr_hugepages"):
        # A negative distance is an integer to the reader (upstream's strconv.Atoi agrees); a page count is not.
        negative = "accept" if template.endswith("distance") else "reject"
        strategies.append(
            st.tuples(
                st.just("huge-number"),
                st.sampled_from(
                    [
                        (b"9" * 5000 + b"\n", "reject"),
                        (b"-1\n", negative),
                        (b"1e3\n", "reject"),
                        (b"18446744073709551615\n", "accept"),
                    ]
                ),
            ).map(lambda t: (t[0], *t[1]))
        )
    return st.one_of(strategies)


@st.composite
def sysfs_corruptions(draw: st.DrawFn) -> Corruption:
    numa = draw(st.sampled_from(sorted(LAYOUT)))
    cpu = draw(st.sampled_from([c for c in LAYOUT[numa] if c]))

    def at(template: str) -> str:
        return "sys/" + template.format(n=numa, c=cpu)

    how = draw(
        st.sampled_from(
            ["content", "content", "content", "missing-file", "file-is-a-directory", "symlink-loop"]
        )
    )
    if how == "content":
        template = draw(st.sampled_from(sorted(_SYSFS_FILES)))
        target = at(template)
        original = sysfs_files()[target.removeprefix("sys/")]
        what, content, expect = draw(_sysfs_contents(template, original))
        return Corruption(what, target, content, expect)
    if how in ("missing-file", "symlink-loop"):
        # A looping symlink "does not exist" to the optional files' existence checks.
        template = draw(st.sampled_from(sorted(_SYSFS_FILES)))
        return Corruption(
            how, at(template), MISSING if how == "missing-file" else LOOP, _SYSFS_FILES[template]
        )
    if how == "file-is-a-directory":
        template = draw(st.sampled_from(sorted(_SYSFS_FILES)))
        return Corruption(
            how, at(template), DIRECTORY, "accept" if template.endswith("cpulist") else "reject"
        )
    raise AssertionError(how)


@st.composite
def sysfs_tree_corruptions(draw: st.DrawFn) -> Corruption:
    """Whole directories gone, or junk where the hugepages directory holds only ``hugepages-<kB>kB``."""
    numa = draw(st.sampled_from(sorted(LAYOUT)))
    cpu = draw(st.sampled_from(LAYOUT[numa]))
    if draw(st.booleans()):
        template = draw(st.sampled_from(sorted(_SYSFS_DIRS)))
        return Corruption(
            "missing-directory", "sys/" + template.format(n=numa, c=cpu), MISSING, _SYSFS_DIRS[template]
        )
    junk = draw(st.sampled_from(["junk", "hugepages-", "hugepages-2MB", "hugepages-kB"]))
    return Corruption("junk-entry", f"sys/devices/system/node/node{numa}/hugepages/{junk}", b"0\n", "reject")


@st.composite
def kubelet_config_corruptions(draw: st.DrawFn) -> Corruption:
    name = "var/lib/kubelet/config.yaml"
    how = draw(
        st.sampled_from(
            [
                "truncated",
                "non-text",
                "random-text",
                "not-a-mapping",
                "malformed-reserved",
                "wrong-type",
                "not-a-file",
                "alias-bomb",
            ]
        )
    )
    if how == "truncated":
        return Corruption(how, name, KUBELET_CONFIG[: draw(st.integers(0, len(KUBELET_CONFIG) - 1))])
    if how == "non-text":
        data = draw(NOT_TEXT)
        return Corruption(how, name, data, "reject")
    if how == "random-text":
        return Corruption(how, name, draw(st.text(max_size=60)).encode())
    if how == "not-a-mapping":
        data = draw(st.sampled_from([b"", b"~\n", b"- a\n- b\n", b"42\n", b"'text'\n", b"[1, 2]\n"]))
        return Corruption(how, name, data, "reject")
    if how == "malformed-reserved":
        value = draw(st.sampled_from(MALFORMED_CPULISTS))
        return Corruption(how, name, KUBELET_CONFIG.replace(b"0,2", json.dumps(value).encode()), "reject")
    if how == "wrong-type":
        key = draw(st.sampled_from([b"reservedSystemCPUs: 0,2", b"topologyManagerPolicy: single-numa-node"]))
        value = draw(st.sampled_from([b"[0, 2]", b"{a: 1}", b"[[[]]]", b"{}"]))
        return Corruption(
            how, name, KUBELET_CONFIG.replace(key, key.split(b":")[0] + b": " + value), "reject"
        )
    if how == "not-a-file":
        return Corruption(how, name, draw(st.sampled_from([DIRECTORY, FIFO, DEVICE, LOOP])), "reject")
    # alias-bomb: a few hundred bytes of YAML aliases that print as billions of elements.
    levels = draw(st.integers(8, 12))
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    key = draw(st.sampled_from(["reservedSystemCPUs", "topologyManagerPolicy", "topologyManagerScope"]))
    lines.append(f"{key}: *a{levels - 1}")
    return Corruption(how, name, ("\n".join(lines) + "\n").encode(), "reject")


# ----------------------------------------------------------------------------- the checks


def _is_about(text: str, node: NodeRoot, corruption: Corruption) -> bool:
    return str(node.root / corruption.target) in text


def check_numainfo(node: NodeRoot, corruption: Corruption, found: Scrape, log: Records) -> bool:
    """The scrape's oracle; returns whether the exporter refused the damaged source."""
    assert not log.problems(), log.problems()
    if corruption.target.startswith("sys/"):
        rejected = not has_cpu_figures(found)
        still = [
            valid_key(checkpoints.CPU_MANAGER_STATE_FILE),
            valid_key(checkpoints.MEMORY_MANAGER_STATE_FILE),
        ]
    else:
        rejected = found[valid_key(Path(corruption.target).name)] == 0
        other = {checkpoints.CPU_MANAGER_STATE_FILE, checkpoints.MEMORY_MANAGER_STATE_FILE} - {
            Path(corruption.target).name
        }
        still = [valid_key(other.pop())]
        assert has_cpu_figures(found), "a damaged checkpoint took the sysfs figures with it"
    assert all(found[key] == 1 for key in still), f"a damaged {corruption.target} took other sources with it"
    warnings = log.at(logging.WARNING)
    if rejected:
        assert any(_is_about(w, node, corruption) for w in warnings), (
            f"no warning names {corruption.target}: {warnings}"
        )
    if corruption.expect == "reject":
        assert rejected, f"accepted: {corruption!r}"
    if corruption.expect == "accept":
        assert not rejected, f"refused: {corruption!r} {warnings}"
    if not rejected and not corruption.target.startswith("sys/") and corruption.how != "random-bytes":
        # The checksum covers the content: an accepted damaged checkpoint says what the original said.
        assert found == node.reference, f"accepted with other figures: {corruption!r}"
    return rejected


def retry_recovers(node: NodeRoot, corruption: Corruption, rejected: bool) -> None:
    """The next scrape after the fix is the reference, and says the source recovered."""
    repair(node, corruption.target)
    with logged() as log:
        found = scrape(node.collector)
    assert not log.problems(), log.problems()
    assert found == node.reference
    if rejected:
        source = node.sysfs if corruption.target.startswith("sys/") else node.root / corruption.target
        assert any(str(source) in m and "recovered" in m for m in log.at(logging.INFO)), log.records


@contextmanager
def corrupted(node: NodeRoot, corruption: Corruption) -> Iterator[dict[str, tuple[Any, ...]]]:
    """Plant the corruption and give the node root's fingerprint; a failed case leaves a pristine node."""
    plant(node.root / corruption.target, corruption.content)
    try:
        yield fingerprint(node.root)
    except BaseException:
        restore(node)
        raise


def run_numainfo_case(node: NodeRoot, corruption: Corruption) -> None:
    with corrupted(node, corruption) as before:
        with logged() as log:
            found = scrape(node.collector)
        assert fingerprint(node.root) == before, f"the exporter wrote below the node root: {corruption!r}"
        rejected = check_numainfo(node, corruption, found, log)
        retry_recovers(node, corruption, rejected)


# ----------------------------------------------------------------------------- numainfo exporter


@settings(max_examples=EXAMPLES["cpu"], **SETTINGS)
@given(corruption=checkpoint_corruptions(checkpoints.CPU_MANAGER_STATE_FILE))
def test_corrupt_cpu_manager_state_is_warned_about_and_retried(
    node: NodeRoot, corruption: Corruption
) -> None:
    run_numainfo_case(node, corruption)


@settings(max_examples=EXAMPLES["memory"], **SETTINGS)
@given(corruption=checkpoint_corruptions(checkpoints.MEMORY_MANAGER_STATE_FILE))
def test_corrupt_memory_manager_state_is_warned_about_and_retried(
    node: NodeRoot, corruption: Corruption
) -> None:
    run_numainfo_case(node, corruption)


# ----------------------------------------------------------------------------- sysfs: both exporters


def run_sysfs_case(node: NodeRoot, corruption: Corruption) -> None:
    with corrupted(node, corruption) as before:
        # The resource-topology-exporter reads the machine once, at start (main → read_machine).
        try:
            machine = read_machine(node.cfg.sysfs)
        except SysinfoError as exc:
            rte_rejected = True
            assert _is_about(str(exc), node, corruption), f"{exc} does not name {corruption.target}"
        else:
            rte_rejected = False
            assert machine.nodes
        with logged() as log:
            found = scrape(node.collector)
        assert fingerprint(node.root) == before, f"an exporter wrote below the node root: {corruption!r}"
        rejected = check_numainfo(node, corruption, found, log)
        assert rte_rejected == rejected, "the two exporters disagree on the same sysfs tree"
        retry_recovers(node, corruption, rejected)


@settings(max_examples=EXAMPLES["sysfs"], **SETTINGS)
@given(corruption=st.one_of(sysfs_corruptions(), sysfs_corruptions(), sysfs_tree_corruptions()))
def test_corrupt_sysfs_is_refused_by_both_exporters_naming_the_file(
    node: NodeRoot, corruption: Corruption
) -> None:
    run_sysfs_case(node, corruption)


# ----------------------------------------------------------------------------- RTE: kubelet configuration


@settings(max_examples=EXAMPLES["kubelet-config"], **SETTINGS)
@given(corruption=kubelet_config_corruptions())
def test_corrupt_kubelet_config_is_a_configuration_error_naming_the_file(
    node: NodeRoot, corruption: Corruption
) -> None:
    with corrupted(node, corruption) as before:
        started = time.monotonic()
        try:
            rteconfig.resolve_topology_manager(node.cfg)
        except rteconfig.ConfigError as exc:
            assert _is_about(str(exc), node, corruption), f"{exc} does not name {corruption.target}"
            assert len(str(exc)) < 2000, "an error line the size of the input"
        else:
            assert corruption.expect != "reject", f"accepted: {corruption!r}"
        assert time.monotonic() - started < 2.0, f"reading the kubelet config took long: {corruption!r}"
        assert fingerprint(node.root) == before, f"the exporter wrote below the node root: {corruption!r}"
        repair(node, corruption.target)


# ----------------------------------------------------------------------------- RTE: the process's start


@pytest.mark.parametrize(
    ("target", "content", "status", "names"),
    [
        pytest.param(
            "sys/devices/system/node/node0/meminfo", b"MemTotal: lots\n", 1, "", id="meminfo-garbage"
        ),
        pytest.param(
            "sys/devices/system/node/node1/distance", b"\xff\xfe10 21", 1, "", id="distance-not-text"
        ),
        pytest.param("sys/devices/system/cpu/online", b"0-99999999999\n", 1, "", id="online-huge-range"),
        pytest.param("sys/devices/system/cpu/online", b"3-1\n", 1, "", id="online-reversed-range"),
        pytest.param(
            "sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages",
            b"9" * 5000,
            1,
            "",
            id="hugepages-5000-digits",
        ),
        pytest.param(
            "sys/devices/system/node/node1/cpu3/online", DIRECTORY, 1, "", id="cpu-online-directory"
        ),
        pytest.param("sys/devices/system/node", MISSING, 1, "", id="no-numa-nodes"),
        pytest.param(
            "var/lib/kubelet/config.yaml", b"\x80\x81", 2, "not UTF-8", id="kubelet-config-not-text"
        ),
        pytest.param(
            "var/lib/kubelet/config.yaml", b"[" * 20000 + b"]" * 20000, 2, "YAML", id="kubelet-config-nested"
        ),
        pytest.param(
            "var/lib/kubelet/config.yaml",
            KUBELET_CONFIG.replace(b"0,2", b"0-4000000000"),
            2,
            "reservedSystemCPUs",
            id="reserved-huge-range",
        ),
    ],
)
def test_rte_refuses_to_start_with_one_line_naming_the_file(
    node: NodeRoot,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
    content: bytes | str,
    status: int,
    names: str,
) -> None:
    """``main`` exits 1 (sysfs) or 2 (configuration) with one line, no traceback, nothing written."""
    restore(node)
    plant(node.root / target, content)
    before = fingerprint(node.root)
    # main configures the root logger for a process; in this one the capture below is enough.
    monkeypatch.setattr(rtemain, "_setup_logging", lambda cfg: None)
    argv = [
        "--config",
        str(node.root / "rte.yaml"),
        "--sysfs",
        str(node.sysfs),
        "--kubelet-config-file",
        str(node.kubelet / "config.yaml"),
        "--no-publish",
        "--podreadiness=false",
        "--podresources-socket",
        f"unix://{node.root}/no-kubelet.sock",
        "--hostname",
        NODE,
    ]
    started = time.monotonic()
    with logged() as log:
        assert rtemain.main(argv) == status
    assert time.monotonic() - started < 10
    assert fingerprint(node.root) == before
    if status == 1:
        errors = log.at(logging.ERROR)
        assert len(errors) == 1 and str(node.root / target) in errors[0], log.records
        assert not any(r.exc_info for r in log.records)
    else:
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("resource-topology-exporter: error: "), err
        assert str(node.root / target) in err[0] and names in err[0]
        assert len(err[0]) < 2000


# ----------------------------------------------------------------------------- live: numainfo-exporter


def _http_scrape(url: str) -> Scrape:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _console_script(name: str) -> str:
    """The installed entry point, as the image runs it (next to this interpreter)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        pytest.skip(f"{name} is not installed next to {sys.executable} (run make install)")
    return str(path)


def _wait_for(what: str, check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"expected {what} within {timeout}s"
        time.sleep(0.05)


def test_live_numainfo_exporter_warns_keeps_serving_and_recovers(node: NodeRoot) -> None:
    restore(node)
    stderr = node.root / "numainfo.log"
    argv = ["-L", "127.0.0.1:0", "-N", NODE, "-Y", str(node.sysfs), "-K", str(node.kubelet)]
    with stderr.open("wb") as err:
        process = subprocess.Popen(
            [_console_script("numainfo-exporter"), *argv], stdout=subprocess.DEVNULL, stderr=err
        )
    try:
        _wait_for("numainfo-exporter to serve", lambda: "serving metrics on" in stderr.read_text())
        url = stderr.read_text().split("serving metrics on ", 1)[1].split()[0]

        def figures() -> Scrape:
            return {
                k: v
                for k, v in _http_scrape(url).items()
                if k[0].startswith("numainfo_") and k[0] != "numainfo_version"
            }

        reference = figures()
        assert reference == {k: v for k, v in node.reference.items() if k[0] != "numainfo_version"}
        damaged = {
            node.kubelet / checkpoints.CPU_MANAGER_STATE_FILE: cpu_checkpoint()[:-9],
            node.kubelet / checkpoints.MEMORY_MANAGER_STATE_FILE: _dump(
                _set(json.loads(memory_checkpoint()), ("checksum",), 1)
            ),
            node.sysfs / "devices/system/node/node1/meminfo": b"\xff",
        }
        for path, data in damaged.items():
            plant(path, data)
        before = fingerprint(node.root / "var")
        found = figures()
        assert process.poll() is None, "numainfo-exporter exited"
        assert found[valid_key(checkpoints.CPU_MANAGER_STATE_FILE)] == 0
        assert found[valid_key(checkpoints.MEMORY_MANAGER_STATE_FILE)] == 0
        assert not has_cpu_figures(found)
        log = stderr.read_text()
        warnings = [
            line for line in log.splitlines() if " WARNING nrop.rte.numainfoexporter: cannot " in line
        ]
        for path in damaged:
            assert any(str(path) in line for line in warnings), log
        assert "Traceback" not in log
        # Scrape again while broken: still serving, still 0, nothing written.
        assert figures() == found
        assert fingerprint(node.root / "var") == before
        restore(node)
        assert figures() == reference
        log = stderr.read_text()
        for source in (node.sysfs, *list(damaged)[:2]):
            assert f"{source} recovered after" in log, log
        assert process.poll() is None
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
