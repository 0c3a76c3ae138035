"""Whether a process runs, as the project's tests ask it: from ``/proc/<pid>/stat``.

Shared by the tests that watch real processes (``nrop-cluster``, pod containers, the kubelet's
process supervisor); ``tests/`` is on ``sys.path`` through its ``conftest.py``.
"""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """Whether ``pid`` runs; a zombie left for its parent or init to reap counts as gone."""
    try:
        # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
