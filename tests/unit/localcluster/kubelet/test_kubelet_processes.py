"""The process supervisor (``kubelet/processes.py``) with real, short-lived processes.

Each test runs its own event loop; the programs are short scripts of this environment's
``python3``, so they start in a fraction of a second. The tests of containers' main processes
run twice: started through the launcher, and forked by a fork server (where the scripts run
without a new interpreter): both must behave alike. Liveness of PIDs is checked through ``/proc``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from procstate import alive

from nrop.localcluster.kubelet.forkserver import ForkServer
from nrop.localcluster.kubelet.processes import MAX_LINE, ProcessSpec, Supervisor, exit_code

PYTHON = str(Path(sys.executable).parent / "python3")
_SCRIPTS = itertools.count()


def script(code: str, directory: Path) -> str:
    """``code`` as an executable script of this environment's interpreter."""
    path = directory / f"program-{next(_SCRIPTS)}"
    path.write_text(f"#!{PYTHON}\n{textwrap.dedent(code)}")
    path.chmod(0o755)
    return str(path)


def spec(code: str, tmp_path: Path) -> ProcessSpec:
    return ProcessSpec((script(code, tmp_path),), {"PYTHONUNBUFFERED": "1"}, tmp_path)


@pytest.fixture(params=["launcher", "forkserver"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextlib.asynccontextmanager
async def supervising(kind: str) -> AsyncIterator[Supervisor]:
    """A supervisor that starts main processes through the launcher or through a fork server."""
    if kind == "launcher":
        yield Supervisor()
        return
    forks = ForkServer(MAX_LINE)
    await forks.start()
    try:
        yield Supervisor(forks)
    finally:
        await forks.close()


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.parametrize(("returncode", "code"), [(0, 0), (3, 3), (-9, 137), (-15, 143)])
def test_exit_code(returncode: int, code: int) -> None:
    assert exit_code(returncode) == code


def test_output_lines_and_exit_code_are_reported(tmp_path: Path, kind: str) -> None:
    async def main() -> tuple[list[str], list[int]]:
        lines: list[str] = []
        exits: list[int] = []
        async with supervising(kind) as supervisor:
            return await started(supervisor, lines, exits)

    async def started(
        supervisor: Supervisor, lines: list[str], exits: list[int]
    ) -> tuple[list[str], list[int]]:
        handle = await supervisor.start(
            spec(
                """
                import os, sys
                print("out", os.getcwd(), sorted(k for k in os.environ if k != "LC_CTYPE"))  # PEP 538 adds it
                sys.stderr.write("err\\n")
                sys.stdout.write("no newline")
                sys.exit(3)
                """,
                tmp_path,
            ),
            lines.append,
            exits.append,
        )
        await handle.done.wait()
        return lines, exits

    lines, exits = asyncio.run(main())
    assert exits == [3]
    # nothing of this process's environment is inherited
    assert sorted(lines) == sorted([f"out {tmp_path} ['PYTHONUNBUFFERED']\n", "err\n", "no newline\n"])


@pytest.mark.parametrize(
    ("program", "grace", "code", "at_most"),
    [
        pytest.param("import time; time.sleep(60)", 10.0, 143, 5.0, id="sigterm-default-action"),
        pytest.param(
            "import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\nprint('up')\ntime.sleep(60)",
            10.0,
            0,
            5.0,
            id="handles-sigterm",
        ),
        pytest.param(
            "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('up')\ntime.sleep(60)",
            0.5,
            137,
            5.0,
            id="sigkill-after-grace",
        ),
    ],
)
def test_terminate(tmp_path: Path, kind: str, program: str, grace: float, code: int, at_most: float) -> None:
    async def main() -> tuple[int | None, float]:
        async with supervising(kind) as supervisor:
            return await terminated(supervisor)

    async def terminated(supervisor: Supervisor) -> tuple[int | None, float]:
        started = asyncio.Event()
        handle = await supervisor.start(spec(program, tmp_path), lambda _line: started.set(), lambda _c: None)
        if "print('up')" in program:
            await asyncio.wait_for(started.wait(), 10)
        else:
            await asyncio.sleep(0.3)
        began = time.monotonic()
        supervisor.terminate(handle, grace)
        await handle.done.wait()
        return handle.exit_code, time.monotonic() - began

    exit_status, took = asyncio.run(main())
    assert exit_status == code
    assert took < at_most


def test_the_rest_of_the_group_dies_with_the_main_process(tmp_path: Path, kind: str) -> None:
    async def main() -> int:
        async with supervising(kind) as supervisor:
            return await first_line(supervisor)

    async def first_line(supervisor: Supervisor) -> int:
        lines: list[str] = []
        handle = await supervisor.start(
            spec(
                f"""
                import subprocess
                child = subprocess.Popen([{PYTHON!r}, "-c", "import time; time.sleep(60)"])
                print(child.pid)
                """,
                tmp_path,
            ),
            lines.append,
            lambda _c: None,
        )
        await handle.done.wait()
        return int(lines[0])

    child = asyncio.run(main())
    assert wait_until(lambda: not alive(child)), f"child {child} outlived its container"


def test_stop_all_leaves_nothing(tmp_path: Path, kind: str) -> None:
    async def main() -> list[int]:
        async with supervising(kind) as supervisor:
            program = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)"
            handles = [
                await supervisor.start(spec(program, tmp_path), lambda _l: None, lambda _c: None)
                for _ in range(3)
            ]
            await supervisor.stop_all(0.5)
            return [h.pid for h in handles]

    pids = asyncio.run(main())
    assert not any(alive(pid) for pid in pids)


def test_processes_die_with_a_killed_parent(tmp_path: Path, kind: str) -> None:
    """PR_SET_PDEATHSIG: a parent killed with SIGKILL (no cleanup at all) takes its processes
    along (with a fork server, the server dies with the parent and the processes with it)."""
    program = script("import time; time.sleep(60)", tmp_path)
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import asyncio, time
                from pathlib import Path
                from nrop.localcluster.kubelet.forkserver import ForkServer
                from nrop.localcluster.kubelet.processes import ProcessSpec, Supervisor
                async def main():
                    forks = None
                    if {kind!r} == "forkserver":
                        forks = ForkServer(1024)
                        await forks.start()
                    handle = await Supervisor(forks).start(
                        ProcessSpec(({program!r},), {{}}, Path({str(tmp_path)!r})),
                        lambda _l: None, lambda _c: None)
                    print(handle.pid, flush=True)
                    await asyncio.sleep(60)
                asyncio.run(main())
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert alive(child)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert wait_until(lambda: not alive(child)), f"process {child} outlived its killed parent"


def test_run_to_completion_and_timeout(tmp_path: Path) -> None:
    async def main() -> list[tuple[int | None, str]]:
        supervisor = Supervisor()
        return [
            await supervisor.run(spec("print('fine')", tmp_path), 10),
            await supervisor.run(spec("import sys; print('bad'); sys.exit(2)", tmp_path), 10),
            await supervisor.run(spec("import time; time.sleep(30)", tmp_path), 0.5),
        ]

    assert asyncio.run(main()) == [(0, "fine\n"), (2, "bad\n"), (None, "")]


def test_a_missing_program_is_refused_before_starting(tmp_path: Path) -> None:
    async def main() -> None:
        await Supervisor().start(ProcessSpec(("/nonexistent/prog",), {}, tmp_path), print, print)

    with pytest.raises(FileNotFoundError) as raised:
        asyncio.run(main())
    assert 'exec: "/nonexistent/prog": no such executable file' in str(raised.value)
    assert os.path.exists(PYTHON)
