"""``nrop-curl`` (``curl`` in the images): the command line, the output, the exit code.

The body goes to stdout, or to the ``-o`` file, created when the first bytes arrive (so ``-f``
on an error status leaves no file, as curl). A failure prints ``curl: (N) message`` on stderr
unless ``-s`` (``-S`` prints it anyway) and exits with curl's code; a bad command line prints
curl's two lines and exits 2. Unlike curl this one draws no progress meter: its stderr holds
only the messages, as with ``-s -S``.

What curl prints is this program's interface, so it writes to stdout and stderr itself; there
is no logging.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import BinaryIO

from nrop.curl import arguments, failures, transfer
from nrop.curl.failures import Failure

__all__ = ["main", "run"]


class _Output:
    """The ``-o`` file, opened at the first write (stdout when there is none)."""

    def __init__(self, path: str | None, stdout: BinaryIO, stderr: BinaryIO) -> None:
        self._path = None if path in (None, "-") else path
        self._stdout = stdout
        self._stderr = stderr
        self._file: BinaryIO | None = None

    def write(self, data: bytes, /) -> int:
        if self._path is None:
            written = self._stdout.write(data)
            self._stdout.flush()
            return written
        if self._file is None:
            try:
                self._file = open(self._path, "wb")  # noqa: SIM115 - closed by close()
            except OSError as exc:
                reason = os.strerror(exc.errno) if exc.errno else str(exc)
                self._stderr.write(f"Warning: Failed to create the file {self._path}: {reason}\n".encode())
                return 0
        return self._file.write(data)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def run(
    argv: Sequence[str],
    stdout: BinaryIO,
    stderr: BinaryIO,
    environ: Mapping[str, str],
) -> int:
    """Run curl with ``argv`` (no program name); the exit code."""
    try:
        invocation = arguments.parse(argv)
    except arguments.UsageError as exc:
        stderr.write("".join(f"{line}\n" for line in exc.lines).encode())
        return arguments.USAGE_EXIT
    output = _Output(invocation.output, stdout, stderr)
    try:
        target = arguments.target(invocation.url)
        if isinstance(target, Failure):
            raise target
        transfer.fetch(invocation, target, output, environ)
    except Failure as failure:
        if invocation.shows_errors:
            stderr.write(f"{failure.line()}\n{failure.hint}".encode())
        return failure.code
    except BrokenPipeError:
        return failures.WRITE_ERROR
    finally:
        output.close()
        stderr.flush()
    return 0


def main() -> int:
    """The console script."""
    return run(sys.argv[1:], sys.stdout.buffer, sys.stderr.buffer, os.environ)
