"""The fork server (``kubelet/forkserver.py``): which programs run without a new interpreter, and how
a script forked from the server starts and ends as the interpreter would start and end it.

The supervisor's behaviour with a fork server (output, exit codes, signals, groups, a killed
parent) is tested in ``test_kubelet_processes.py`` with both ways of starting a process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from nrop.localcluster.kubelet import launching
from nrop.localcluster.kubelet.forkserver import ForkServer, python_script
from nrop.localcluster.kubelet.processes import MAX_LINE, ProcessSpec, Supervisor

BIN = Path(sys.executable).parent
PYTHON = str(BIN / "python3")


def write(path: Path, text: str, mode: int = 0o755) -> str:
    path.write_text(text)
    path.chmod(mode)
    return str(path)


@pytest.mark.parametrize(
    ("first_line", "expected"),
    [
        pytest.param(f"#!{BIN}/python3\n", True, id="this-environment"),
        pytest.param(f"#!{BIN}/python\n", True, id="this-environment-python"),
        pytest.param(f"#!{BIN}/python3 -u\n", False, id="with-an-option"),
        pytest.param("#!/usr/bin/python3\n", False, id="another-interpreter"),
        pytest.param("#!/usr/bin/env python3\n", False, id="env-lookup"),
        pytest.param("#!/bin/sh\n", False, id="shell"),
        pytest.param(f"#!{BIN}/pip\n", False, id="not-python"),
        pytest.param("print('no shebang')\n", False, id="no-shebang"),
    ],
)
def test_which_programs_run_in_the_forked_interpreter(
    tmp_path: Path, first_line: str, expected: bool
) -> None:
    named = python_script(write(tmp_path / "prog", first_line + "pass\n"), sys.executable)
    assert named == (first_line[2:].strip() if expected else None)


def test_the_environments_console_scripts_run_in_the_forked_interpreter(tmp_path: Path) -> None:
    assert python_script(str(BIN / "resource-topology-exporter"), sys.executable) is not None
    assert python_script(str(tmp_path / "missing"), sys.executable) is None


def run(
    code: str, tmp_path: Path, env: dict[str, str] | None = None, namespace: str = ""
) -> tuple[int, str, str]:
    """``code`` as a script forked by a fork server: (return code, stdout, stderr)."""
    program = write(tmp_path / "program", f"#!{PYTHON}\n{textwrap.dedent(code)}")

    async def main() -> tuple[int, str, str]:
        forks = ForkServer(MAX_LINE)
        await forks.start()
        try:
            process = await forks.spawn([program, "an argument"], env or {}, str(tmp_path), namespace)
            out, err = await asyncio.gather(process.stdout.read(), process.stderr.read())
            return await process.wait(), out.decode(), err.decode()
        finally:
            await forks.close()

    return asyncio.run(main())


@pytest.mark.parametrize(
    ("code", "returncode", "stdout", "in_stderr"),
    [
        pytest.param("print('done')", 0, "done\n", "", id="falls-off-the-end"),
        pytest.param("import sys; sys.exit(3)", 3, "", "", id="sys-exit-status"),
        pytest.param("raise SystemExit(259)", 3, "", "", id="status-modulo-256"),
        pytest.param("raise SystemExit", 0, "", "", id="sys-exit-none"),
        pytest.param("raise SystemExit('bye')", 1, "", "bye\n", id="sys-exit-message"),
        pytest.param("raise ValueError('boom')", 1, "", "ValueError: boom", id="uncaught-exception"),
        pytest.param("raise KeyboardInterrupt", -signal.SIGINT, "", "KeyboardInterrupt", id="interrupted"),
        pytest.param("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", -9, "", "", id="killed"),
        pytest.param(
            """
            import atexit, threading, time
            atexit.register(lambda: print("atexit"))
            threading.Thread(target=lambda: (time.sleep(0.2), print("thread"))).start()
            """,
            0,
            "thread\natexit\n",
            "",
            id="threads-joined-then-atexit",
        ),
        pytest.param(
            "import sys, os; print(sys.argv[1:], os.getcwd() == os.environ['WHERE'], os.getpgid(0) == os.getpid(),"
            " open('/proc/self/comm').read().strip())",
            0,
            "['an argument'] True True program\n",
            "",
            id="argv-cwd-session-name",
        ),
        pytest.param(
            """
            import os, sys
            cmdline = open("/proc/self/cmdline", "rb").read().split(b"\\0")[:-1]
            environ = open("/proc/self/environ", "rb").read().split(b"\\0")[:-1]
            print([os.fsdecode(a) for a in cmdline] == [sys.executable, *sys.argv], sorted(environ))
            """,
            0,
            "True [b'PYTHONUNBUFFERED=1', b'WHERE={where}']\n",
            "",
            id="proc-shows-the-scripts-command-line-and-environment",
        ),
    ],
)
def test_a_forked_script_ends_as_the_interpreter_would(
    tmp_path: Path, code: str, returncode: int, stdout: str, in_stderr: str
) -> None:
    status, out, err = run(code, tmp_path, {"WHERE": str(tmp_path), "PYTHONUNBUFFERED": "1"})
    assert (status, out) == (returncode, stdout.replace("{where}", str(tmp_path))), err
    assert in_stderr in err


def test_the_containers_sitecustomize_runs_before_anything_of_the_product(tmp_path: Path) -> None:
    """A seeded defect's hook and the pod's in-cluster paths are a ``sitecustomize`` on the
    container's ``PYTHONPATH``: it must run anew in each child, with ``sys.argv`` set and no
    module of the product imported yet (the server imports none)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        "PRODUCT = sorted(m for m in sys.modules if m == 'nrop' or m.startswith('nrop.'))\n"
        "ARGV = list(sys.argv)\n"
    )
    status, out, err = run(
        """
        import json, sys, sitecustomize
        print(json.dumps([sitecustomize.__file__, sitecustomize.PRODUCT, sitecustomize.ARGV, sys.path[0]]))
        """,
        tmp_path,
        {"PYTHONPATH": str(site)},
    )
    assert status == 0, err
    where, product, argv, first = json.loads(out)
    assert where == str(site / "sitecustomize.py")
    assert product == []
    assert argv == [str(tmp_path / "program"), "an argument"]
    assert first == str(tmp_path)  # the script's directory, ahead of PYTHONPATH as a fresh run puts it


def test_a_missing_working_directory_is_refused(tmp_path: Path) -> None:
    async def main() -> None:
        forks = ForkServer(MAX_LINE)
        await forks.start()
        try:
            await forks.spawn(["/bin/true"], {}, str(tmp_path / "missing"), "")
        finally:
            await forks.close()

    with pytest.raises(FileNotFoundError, match="missing"):
        asyncio.run(main())


def test_other_programs_are_executed(tmp_path: Path) -> None:
    program = write(tmp_path / "prog.sh", '#!/bin/sh\necho "$0 $1 $HOME"\nexit 4\n')

    async def main() -> tuple[int, bytes]:
        forks = ForkServer(MAX_LINE)
        await forks.start()
        try:
            process = await forks.spawn([program, "x"], {"HOME": "/home/y"}, str(tmp_path), "")
            out = await process.stdout.read()
            return await process.wait(), out
        finally:
            await forks.close()

    assert asyncio.run(main()) == (4, f"{program} x /home/y\n".encode())


def test_a_server_that_ends_takes_its_children_and_the_supervisor_goes_on_without_it(tmp_path: Path) -> None:
    sleeper = write(tmp_path / "sleeper", f"#!{PYTHON}\nimport time\ntime.sleep(60)\n")
    quick = write(tmp_path / "quick", f"#!{PYTHON}\nprint('after')\n")

    async def main() -> tuple[int | None, list[str], list[int]]:
        forks = ForkServer(MAX_LINE)
        await forks.start()
        supervisor = Supervisor(forks)
        codes: list[int] = []
        first = await supervisor.start(ProcessSpec((sleeper,), {}, tmp_path), lambda _l: None, codes.append)
        assert forks.pid is not None
        os.kill(forks.pid, signal.SIGKILL)
        await asyncio.wait_for(first.done.wait(), 10)
        lines: list[str] = []
        second = await supervisor.start(ProcessSpec((quick,), {}, tmp_path), lines.append, codes.append)
        await asyncio.wait_for(second.done.wait(), 10)
        await forks.close()
        return first.exit_code, lines, codes

    assert asyncio.run(main()) == (137, ["after\n"], [137, 0])


@pytest.mark.skipif(launching.check() is not None, reason=f"no mount namespaces here: {launching.check()}")
def test_a_forked_script_gets_the_containers_mounts(tmp_path: Path) -> None:
    source = tmp_path / "volume"
    source.mkdir()
    (source / "data").write_text("from the volume\n")
    target = f"/nrop-forkserver-test-{tmp_path.name}"
    plan = ProcessSpec((), {}, tmp_path, rootfs=tmp_path / "rootfs", mounts=((str(source), target, True),))
    status, out, err = run(
        f"""
        import os
        print(open({target + "/data"!r}).read(), end="")
        print(os.access({target!r}, os.W_OK))
        """,
        tmp_path,
        namespace=plan.namespace(),
    )
    assert (status, out) == (0, "from the volume\nFalse\n"), err
    assert not Path(target).exists()  # made in the child's own mount namespace only
