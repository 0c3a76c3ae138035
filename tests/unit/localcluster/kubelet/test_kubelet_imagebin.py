"""A process container's ``bin`` directory: links to the machine's programs, ``exec`` scripts for the
environment's (which keep the interpreter in its venv), and exactly the image's executables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from nrop.localcluster.kubelet.imagebin import populate, wrapper

ENVIRONMENT_BIN = Path(sys.executable).parent


def test_wrapper_quotes_the_program() -> None:
    assert wrapper(Path("/a b/python3")) == "#!/bin/sh\nexec '/a b/python3' \"$@\"\n"


def test_a_shell_finds_the_images_executables_first(tmp_path: Path) -> None:
    directory = tmp_path / "bin"
    populate(
        directory,
        {
            "sh": Path("/bin/sh"),
            "python3": ENVIRONMENT_BIN / "python3",
            "curl": ENVIRONMENT_BIN / "nrop-curl",
        },
        ENVIRONMENT_BIN,
    )
    assert (directory / "sh").readlink() == Path("/bin/sh")
    assert not (directory / "python3").is_symlink()
    done = subprocess.run(
        [
            str(directory / "sh"),
            "-c",
            "command -v curl; python3 -c 'import sys, nrop.curl; print(sys.prefix)'",
        ],
        env={"PATH": f"{directory}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert done.stdout.splitlines() == [str(directory / "curl"), sys.prefix]


def test_only_the_images_executables_stay(tmp_path: Path) -> None:
    directory = tmp_path / "bin"
    populate(directory, {"old": ENVIRONMENT_BIN / "python3", "sh": Path("/bin/sh")}, ENVIRONMENT_BIN)
    populate(directory, {"sh": Path("/bin/sh")}, ENVIRONMENT_BIN)
    assert sorted(p.name for p in directory.iterdir()) == ["sh"]
