"""``nrop-cluster`` as users run it: a real subprocess, its stdout contract, signals and files.

``up`` prints exactly one ``ready: kubeconfig=<path>`` line on stdout once the
kubeconfig works, serves HTTPS on 127.0.0.1 only, and on SIGTERM or SIGINT
exits 0 promptly without a traceback, even with watches open; a temporary state
directory goes away with it while an explicit ``--state-dir`` stays.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import queue
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from procstate import alive

NROP_CLUSTER = Path(sys.executable).parent / "nrop-cluster"
KUBECTL = shutil.which("kubectl")
READY_TIMEOUT = 20.0  # seconds until the ready line
EXIT_TIMEOUT = 5.0  # seconds from a signal to the exit
# An open watch must not hold shutdown up: real API servers close streams at once.
EXIT_TIMEOUT_WITH_WATCH = 2.0
READY_PREFIX = "ready: kubeconfig="


def _env() -> dict[str, str]:
    """The caller's environment without the NROP_CLUSTER_* defaults the CLI reads."""
    return {k: v for k, v in os.environ.items() if not k.startswith("NROP_CLUSTER_")}


@dataclass
class Up:
    """One ``nrop-cluster up`` process with its stdout lines in a queue and stderr in a file."""

    proc: subprocess.Popen[str]
    stderr_path: Path
    lines: queue.Queue[str | None] = field(default_factory=queue.Queue)
    stdout: list[str] = field(default_factory=list)
    kubeconfig: Path | None = None

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> Path:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(0.01, remaining))
            except queue.Empty:
                raise AssertionError(
                    f"expected a ready line within {timeout}s, got instead stdout {self.stdout!r}, "
                    f"stderr:\n{self.stderr()}"
                ) from None
            if line is None:
                raise AssertionError(
                    f"expected a ready line, but nrop-cluster exited {self.proc.wait()}; stderr:\n{self.stderr()}"
                )
            self.stdout.append(line)
            if line.startswith(READY_PREFIX):
                self.kubeconfig = Path(line[len(READY_PREFIX) :].rstrip("\n"))
                return self.kubeconfig

    def stop(self, sig: int = signal.SIGTERM, timeout: float = EXIT_TIMEOUT) -> tuple[int, float]:
        """Send ``sig``; returns (exit code, seconds it took)."""
        start = time.monotonic()
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout + 5)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"nrop-cluster ignored {signal.Signals(sig).name}; stderr:\n{self.stderr()}"
            ) from None
        elapsed = time.monotonic() - start
        while (line := self.lines.get(timeout=5)) is not None:
            self.stdout.append(line)
        return code, elapsed

    def stderr(self) -> str:
        return self.stderr_path.read_text() if self.stderr_path.exists() else ""


@pytest.fixture
def start_up(tmp_path: Path) -> Iterator[Callable[..., Up]]:
    started: list[Up] = []

    def start(*args: str) -> Up:
        stderr_path = tmp_path / f"stderr-{len(started)}.txt"
        with stderr_path.open("w") as stderr:
            proc = subprocess.Popen(
                [str(NROP_CLUSTER), "up", *args],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env=_env(),
            )
        up = Up(proc, stderr_path)
        threading.Thread(target=up._pump, daemon=True).start()
        started.append(up)
        return up

    yield start
    for up in started:
        if up.proc.poll() is None:
            up.proc.kill()
            up.proc.wait(timeout=10)


def _cluster_of(kubeconfig: Path) -> tuple[str, ssl.SSLContext, str]:
    """(server URL, TLS context trusting the cluster CA, admin token) from a kubeconfig."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    context = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode("ascii")
    )
    return cluster["server"], context, config["users"][0]["user"]["token"]


def _connection(kubeconfig: Path, timeout: float = 10) -> http.client.HTTPSConnection:
    server, context, _ = _cluster_of(kubeconfig)
    url = urlsplit(server)
    assert url.hostname is not None and url.port is not None
    return http.client.HTTPSConnection(url.hostname, url.port, context=context, timeout=timeout)


def _non_loopback_ipv4() -> str | None:
    """A local non-loopback IPv4 address, if the machine has one (no packet is sent)."""
    candidates: set[str] = set()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: only picks the outgoing interface
            candidates.add(probe.getsockname()[0])
        except OSError:
            pass
    try:
        candidates.update(
            info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
        )
    except OSError:
        pass
    usable = sorted(a for a in candidates if not a.startswith("127.") and a != "0.0.0.0")
    return usable[0] if usable else None


def _catches(status: Path, sig: int) -> bool:
    """Whether the process behind ``/proc/<pid>/status`` has a handler for ``sig``."""
    for line in status.read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- ready line and signals -----------------------------------------------------------------


def test_up_prints_one_ready_line_and_kubectl_works(start_up: Callable[..., Up]) -> None:
    up = start_up("--profile", "empty")
    kubeconfig = up.wait_ready()
    assert kubeconfig.is_file()
    if KUBECTL is None:
        code, _ = up.stop()
        pytest.skip("kubectl is not on PATH: the kubeconfig was not checked with kubectl")
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "get", "ns", "-o", "name"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    code, _ = up.stop()
    assert result.returncode == 0, result.stderr
    assert "namespace/default" in result.stdout.split()
    assert code == 0, up.stderr()
    assert up.stdout == [f"{READY_PREFIX}{kubeconfig}\n"], "stdout must hold the ready line and nothing else"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_exits_zero_and_removes_the_temporary_state_dir(start_up: Callable[..., Up], sig: int) -> None:
    up = start_up("--profile", "empty")
    kubeconfig = up.wait_ready()
    state_dir = kubeconfig.parent
    assert (state_dir / "pki").is_dir()
    code, elapsed = up.stop(sig)
    assert code == 0, up.stderr()
    assert elapsed < EXIT_TIMEOUT, f"took {elapsed:.1f}s to exit"
    assert "Traceback" not in up.stderr()
    assert not state_dir.exists(), "the temporary state dir outlived the cluster"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_during_startup_exits_zero_without_traceback(start_up: Callable[..., Up], sig: int) -> None:
    # A supervisor may give up on a cluster that is still importing and starting. The
    # interpreter's own start cannot be covered: send as soon as nrop-cluster catches
    # SIGTERM, which is long (the server's imports) before it could be ready.
    up = start_up("--profile", "empty")
    status = Path(f"/proc/{up.proc.pid}/status")
    if not status.exists():
        pytest.skip("no /proc/<pid>/status to tell when nrop-cluster catches signals")
    deadline = time.monotonic() + READY_TIMEOUT
    while not _catches(status, signal.SIGTERM) and time.monotonic() < deadline:
        time.sleep(0.005)
    code, elapsed = up.stop(sig)
    assert (code, "Traceback" in up.stderr()) == (0, False), up.stderr()
    assert elapsed < EXIT_TIMEOUT
    assert up.stdout == [], "a cluster stopped while starting announced itself ready"


def test_shipped_default_profile_starts_and_stops(start_up: Callable[..., Up]) -> None:
    up = start_up()
    up.wait_ready()
    code, elapsed = up.stop(signal.SIGTERM)
    assert (code, "Traceback" in up.stderr()) == (0, False), up.stderr()
    assert elapsed < EXIT_TIMEOUT


def test_sigterm_ends_open_watches_promptly(start_up: Callable[..., Up]) -> None:
    up = start_up("--profile", "empty")
    kubeconfig = up.wait_ready()
    _, _, token = _cluster_of(kubeconfig)
    conn = _connection(kubeconfig)
    conn.request(
        "GET",
        "/api/v1/configmaps?watch=true&allowWatchBookmarks=true&resourceVersion=0",
        headers={"Authorization": f"Bearer {token}"},
    )
    response = conn.getresponse()
    assert response.status == 200
    code, elapsed = up.stop(signal.SIGTERM, timeout=EXIT_TIMEOUT_WITH_WATCH)
    try:
        rest = response.read()
    except (http.client.IncompleteRead, ConnectionError, ssl.SSLError) as exc:
        rest = repr(exc).encode()
    finally:
        conn.close()
    assert code == 0, up.stderr()
    assert elapsed < EXIT_TIMEOUT_WITH_WATCH, f"an open watch held shutdown up for {elapsed:.1f}s"
    assert "Traceback" not in up.stderr()
    for line in rest.splitlines():
        assert json.loads(line)["type"] in ("ADDED", "BOOKMARK"), rest


# -- files, port, address ---------------------------------------------------------------------


def test_explicit_state_dir_is_kept(start_up: Callable[..., Up], tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    up = start_up("--profile", "empty", "--state-dir", str(state_dir))
    kubeconfig = up.wait_ready()
    assert kubeconfig == state_dir / "kubeconfig"
    code, _ = up.stop()
    assert code == 0, up.stderr()
    # The state stays; the kubeconfig, pointing at a port nothing serves any more, goes.
    assert not kubeconfig.exists() and (state_dir / "pki").is_dir()


def test_keep_kubeconfig_leaves_it_behind(start_up: Callable[..., Up], tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    up = start_up("--profile", "empty", "--state-dir", str(state_dir), "--keep-kubeconfig")
    kubeconfig = up.wait_ready()
    code, _ = up.stop()
    assert code == 0, up.stderr()
    assert kubeconfig.is_file()


def test_kubeconfig_flag_chooses_where_it_is_written(start_up: Callable[..., Up], tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "admin.kubeconfig"
    target.parent.mkdir()
    up = start_up("--profile", "empty", "--kubeconfig", str(target))
    assert up.wait_ready() == target
    assert target.stat().st_mode & 0o077 == 0, "a kubeconfig holding a token must not be group/world readable"
    code, _ = up.stop()
    assert code == 0, up.stderr()


def test_port_flag_fixes_the_port(start_up: Callable[..., Up]) -> None:
    port = _free_port()
    up = start_up("--profile", "empty", "--port", str(port))
    server, _, _ = _cluster_of(up.wait_ready())
    assert server == f"https://127.0.0.1:{port}"
    conn = _connection(up.kubeconfig or Path())
    conn.request("GET", "/readyz")
    assert conn.getresponse().status == 200
    conn.close()
    assert up.stop()[0] == 0, up.stderr()


def test_busy_port_fails_with_a_message(start_up: Callable[..., Up]) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        up = start_up("--profile", "empty", "--port", str(port))
        code = up.proc.wait(timeout=20)
    stderr = up.stderr()
    assert code != 0
    assert "nrop-cluster:" in stderr and str(port) in stderr, stderr
    assert "Traceback" not in stderr
    assert not any(line.startswith(READY_PREFIX) for line in iter(up.lines.get, None))


def test_serves_loopback_only(start_up: Callable[..., Up]) -> None:
    up = start_up("--profile", "empty")
    server, _, _ = _cluster_of(up.wait_ready())
    url = urlsplit(server)
    assert (url.scheme, url.hostname) == ("https", "127.0.0.1")
    address = _non_loopback_ipv4()
    try:
        if address is None:
            pytest.skip("this machine has only loopback addresses: nothing to check the binding against")
        with pytest.raises(OSError), socket.create_connection((address, url.port or 0), timeout=3):
            pass
    finally:
        assert up.stop()[0] == 0, up.stderr()


# -- requests without credentials ----------------------------------------------------------------


def test_anonymous_request_gets_401_status(start_up: Callable[..., Up]) -> None:
    up = start_up("--profile", "empty")
    conn = _connection(up.wait_ready())
    conn.request("GET", "/api/v1/namespaces")
    response = conn.getresponse()
    body: dict[str, Any] = json.loads(response.read())
    conn.close()
    assert response.status == 401
    assert response.getheader("Content-Type", "").startswith("application/json")
    assert (body["kind"], body["apiVersion"], body["status"], body["code"], body["reason"]) == (
        "Status",
        "v1",
        "Failure",
        401,
        "Unauthorized",
    )
    assert up.stop()[0] == 0, up.stderr()


# -- other commands and bad input ---------------------------------------------------------------


def test_unknown_profile_exits_non_zero_naming_it() -> None:
    result = subprocess.run(
        [str(NROP_CLUSTER), "up", "--profile", "nosuch"],
        capture_output=True,
        text=True,
        timeout=30,
        env=_env(),
        check=False,
    )
    assert result.returncode != 0
    assert "nosuch" in result.stderr and "profile" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_profiles_lists_empty_with_a_summary() -> None:
    result = subprocess.run(
        [str(NROP_CLUSTER), "profiles"], capture_output=True, text=True, timeout=30, env=_env(), check=True
    )
    rows = {
        line.split(None, 1)[0]: line.split(None, 1)[1:] for line in result.stdout.splitlines() if line.strip()
    }
    assert "empty" in rows and "default" in rows
    assert rows["empty"] and rows["empty"][0].strip(), f"no summary for 'empty' in:\n{result.stdout}"


# -- down ---------------------------------------------------------------------------------------


def _down(state_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NROP_CLUSTER), "down", "--state-dir", str(state_dir), *extra],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
        check=False,
    )


def test_down_stops_up_and_up_removes_its_pid_file(start_up: Callable[..., Up], tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    up = start_up("--profile", "empty", "--state-dir", str(state_dir))
    up.wait_ready()
    pid, start_time = (state_dir / "nrop-cluster.pid").read_text().split()
    assert int(pid) == up.proc.pid and int(start_time) > 0
    began = time.monotonic()
    result = _down(state_dir)
    assert result.returncode == 0, result.stderr
    # down waits for the exit: the process is gone (or a zombie for its parent to reap) when it returns.
    assert up.proc.wait(timeout=1) == 0, up.stderr()
    assert time.monotonic() - began < EXIT_TIMEOUT + 2
    assert not (state_dir / "nrop-cluster.pid").exists()
    assert not (state_dir / "kubeconfig").exists()
    assert "Traceback" not in up.stderr() + result.stderr


@pytest.mark.parametrize(
    ("content", "code", "message"),
    [
        pytest.param(None, 1, "no cluster is running in {dir} (no nrop-cluster.pid)", id="no-pid-file"),
        pytest.param(
            "12x 5\n", 1, "{dir}/nrop-cluster.pid: expected '<pid> <start time>', got '12x 5'", id="bad"
        ),
        pytest.param(
            "1234\n", 1, "{dir}/nrop-cluster.pid: expected '<pid> <start time>', got '1234'", id="no-start"
        ),
        # PID 1 runs, but started at another clock tick: a recycled PID is never signalled.
        pytest.param("1 {other_start}\n", 0, "", id="stale-recycled-pid"),
    ],
)
def test_down_without_a_running_cluster(tmp_path: Path, content: str | None, code: int, message: str) -> None:
    pid_file = tmp_path / "nrop-cluster.pid"
    if content is not None:
        init_start = int(Path("/proc/1/stat").read_text().rsplit(")", 1)[1].split()[19])
        pid_file.write_text(content.format(other_start=init_start + 1))
    result = _down(tmp_path)
    assert result.returncode == code, result.stderr
    assert message.format(dir=tmp_path) in result.stderr
    assert "Traceback" not in result.stderr
    if code == 0:
        assert not pid_file.exists(), "a stale pid file was left behind"


# A parent that starts `nrop-cluster up`, reports the child's pid and then waits to be killed.
_PARENT = """
import subprocess, sys
child = subprocess.Popen([sys.argv[1], "up", "--profile", "empty", *sys.argv[2:]], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
print(child.pid, flush=True)
for line in child.stdout:
    print(line, end="", flush=True)
"""


@pytest.mark.parametrize(
    ("flag", "survives"), [("--exit-with-parent", False), (None, True)], ids=["exit-with-parent", "default"]
)
def test_exit_with_parent_stops_the_cluster_when_its_parent_is_killed(
    tmp_path: Path, flag: str | None, survives: bool
) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, str(NROP_CLUSTER), *([flag] if flag else [])],
        stdout=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        ready = parent.stdout.readline()
        assert ready.startswith(READY_PREFIX), f"expected the ready line, got {ready!r}"
        state_dir = Path(ready[len(READY_PREFIX) :].rstrip("\n")).parent
        parent.kill()  # SIGKILL: the parent cannot stop its child
        parent.wait(timeout=10)
        deadline = time.monotonic() + EXIT_TIMEOUT + 2.0  # a poll of the parent, then the shutdown
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert alive(child) is survives
        if not survives:
            assert not state_dir.exists(), "the temporary state dir outlived the cluster"
    finally:
        if alive(child):  # stopped as users stop it, so that its temporary state dir goes too
            os.kill(child, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while alive(child) and time.monotonic() < deadline:
                time.sleep(0.1)
        if alive(child):
            os.kill(child, signal.SIGKILL)
