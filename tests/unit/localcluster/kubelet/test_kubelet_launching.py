"""The container launcher (``kubelet/launching.py``) with real mount namespaces.

Each test runs the launcher as the kubelet does (``python -I -S launching.py``), with
mounts at paths that do not exist on the machine, and checks what the program sees, that
read-only means read-only, and that the machine's mount table and directories are left as
they were. Skipped where the machine refuses mount namespaces (not root, no
``CAP_SYS_ADMIN``), as the kubelet then falls back to path rewriting.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from nrop.localcluster.kubelet import launching

PYTHON = str(Path(sys.executable).parent / "python3")

needs_namespaces = pytest.mark.skipif(
    launching.check() is not None, reason=f"no mount namespaces here: {launching.check()}"
)


def mountinfo() -> list[str]:
    """The mount table of this process: the machine's."""
    return Path("/proc/self/mountinfo").read_text().splitlines()


def launch(
    plan: dict[str, object] | None, code: str, cwd: Path, python: str = PYTHON
) -> subprocess.CompletedProcess[str]:
    argv = launching.launch_argv(
        os.getpid(), json.dumps(plan) if plan else "", [python, "-c", textwrap.dedent(code)]
    )
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


@needs_namespaces
def test_a_process_sees_its_mounts_and_the_machine_sees_nothing(tmp_path: Path) -> None:
    data, config, log = tmp_path / "data", tmp_path / "config", tmp_path / "log"
    data.mkdir()
    config.mkdir()
    (config / "greeting").write_text("hello")
    log.write_text("")
    unique = f"nrop-test-{uuid.uuid4().hex[:8]}"
    top, nested, file = f"/{unique}", f"/var/run/{unique}/a/b", f"/dev/{unique}-log"
    plan = {
        "rootfs": str(tmp_path / "rootfs"),
        "mounts": [[str(data), top, False], [str(config), nested, True], [str(log), file, False]],
    }
    before = mountinfo()
    done = launch(
        plan,
        f"""
        import errno, os
        print("cwd", os.getcwd())
        open("{top}/written", "w").write("from the container")
        print("config", open("{nested}/greeting").read())
        try:
            open("{nested}/greeting", "w")
        except OSError as exc:
            print("read-only", errno.errorcode[exc.errno])
        open("{file}", "w").write("message")
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:3] == [f"cwd {tmp_path}", "config hello", "read-only EROFS"]
    assert (data / "written").read_text() == "from the container"
    assert log.read_text() == "message"
    assert mountinfo() == before
    assert not any(os.path.lexists(p) for p in (top, f"/run/{unique}", file))


@needs_namespaces
def test_a_mount_over_the_parent_of_a_source_hides_not_that_source(tmp_path: Path) -> None:
    empty, config = tmp_path / "empty", tmp_path / "config"
    empty.mkdir()
    config.mkdir()
    (config / "greeting").write_text("hello")
    target = f"/etc/nrop-test-{uuid.uuid4().hex[:8]}"
    assert str(tmp_path).startswith("/tmp/")
    plan = {
        "rootfs": str(tmp_path / "rootfs"),
        "mounts": [[str(empty), "/tmp", False], [str(config), target, True]],
    }
    # the program runs after the mounts: a venv under /tmp (a checkout there) would be hidden by the
    # empty /tmp, so the base interpreter runs it
    base_python = str(Path(sys.base_prefix) / "bin" / "python3")
    code = f"import os; print(os.listdir('/tmp'), open('{target}/greeting').read())"
    done = launch(plan, code, tmp_path, python=base_python)
    assert (done.returncode, done.stdout) == (0, "[] hello\n"), done.stderr


@needs_namespaces
def test_no_namespace_runs_in_the_machines_view(tmp_path: Path) -> None:
    done = launch(None, "import os; print(os.readlink('/proc/self/ns/mnt'))", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == os.readlink("/proc/self/ns/mnt")


@needs_namespaces
def test_a_mount_that_cannot_be_made_fails_the_container(tmp_path: Path) -> None:
    plan = {"rootfs": str(tmp_path / "rootfs"), "mounts": [[str(tmp_path / "missing"), "/tmp", False]]}
    done = launch(plan, "print('never')", tmp_path)
    assert done.returncode == launching.SETUP_FAILED
    assert done.stdout == ""
    assert (
        done.stderr
        == f"failed to create the container's mounts: No such file or directory: {tmp_path / 'missing'}\n"
    )


def _drop_cap_sys_admin() -> None:
    """In the child before exec: no CAP_SYS_ADMIN in the bounding set, so none after exec, even as root."""
    if ctypes.CDLL(None, use_errno=True).prctl(_PR_CAPBSET_DROP, _CAP_SYS_ADMIN) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


_PR_CAPBSET_DROP = 24
_CAP_SYS_ADMIN = 21


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop CAP_SYS_ADMIN from a child")
def test_the_check_tells_why_a_process_without_cap_sys_admin_gets_no_namespace() -> None:
    done = subprocess.run(
        [sys.executable, "-I", "-S", launching.__file__, "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=_drop_cap_sys_admin,
    )
    assert (done.returncode, done.stderr) == (1, "unshare(CLONE_NEWNS): Operation not permitted\n")
