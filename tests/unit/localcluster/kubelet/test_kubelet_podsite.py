"""The sitecustomize of pod processes: the official client's in-cluster files are the pod's volume."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from nrop.localcluster.kubelet.podsite import write_site


def test_python_process_reads_in_cluster_files_from_the_volume(tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    site = write_site(tmp_path / "python", str(volume)).parent
    script = (
        "from kubernetes.config import incluster_config as c\n"
        "print(c.SERVICE_TOKEN_FILENAME)\nprint(c.SERVICE_CERT_FILENAME)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    assert out == [str(volume / "token"), str(volume / "ca.crt")]
