"""Regenerate the gRPC stubs of this package from the ``.proto`` files in ``nrop.api.proto``.

Usage, from the repository root::

    .venv/bin/python -m nrop.api.grpc.regenerate           # rewrite the committed stubs
    .venv/bin/python -m nrop.api.grpc.regenerate --check   # exit 1 if they are stale

(``.venv/bin/python api/grpc/regenerate.py`` works too.) It needs ``grpcio-tools``
(the ``test`` extra) and runs ``python -m grpc_tools.protoc`` with the same interpreter.

How it stays importable and reproducible:

* Each ``api/proto/<api>/<version>/api.proto`` is copied into a scratch directory at
  ``nrop/api/grpc/<api>/<version>/api.proto`` and compiled with that directory as the
  only include path. The generated ``api_pb2_grpc.py`` therefore imports its sibling as
  ``nrop.api.grpc.<api>.<version>.api_pb2`` (no ``sys.path`` tricks or text rewriting),
  and each file registers a distinct name in the protobuf descriptor pool, so both
  APIs load in one interpreter even though both are called ``api.proto`` upstream.
* Outputs are ``api_pb2.py``, ``api_pb2.pyi`` and ``api_pb2_grpc.py`` next to this
  script's ``<api>/<version>/__init__.py``. For a given grpcio-tools version the output
  is byte-for-byte stable (no timestamps or absolute paths), which the unit test
  ``tests/unit/api/test_grpc_stubs.py`` checks. The stubs record the protobuf and grpcio
  versions they were generated with and refuse older runtimes at import time.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["APIS", "OUTPUTS", "generate", "main", "stale_files", "write"]

#: (api, version) pairs: proto ``api/proto/<api>/<version>/api.proto``.
APIS: tuple[tuple[str, str], ...] = (("podresources", "v1"), ("deviceplugin", "v1beta1"))
#: Files protoc writes for each API.
OUTPUTS: tuple[str, ...] = ("api_pb2.py", "api_pb2.pyi", "api_pb2_grpc.py")

_GRPC_DIR = Path(__file__).resolve().parent
_PROTO_DIR = _GRPC_DIR.parent / "proto"
_IMPORT_ROOT = ("nrop", "api", "grpc")


def generate() -> dict[Path, bytes]:
    """Compile every proto in a scratch tree; map output paths (relative to this package) to bytes."""
    results: dict[Path, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="nrop-protoc-") as scratch:
        root = Path(scratch)
        sources: list[str] = []
        for api, version in APIS:
            relative = Path(*_IMPORT_ROOT, api, version, "api.proto")
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(_PROTO_DIR / api / version / "api.proto", root / relative)
            sources.append(relative.as_posix())
        command = [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"--proto_path={root}",
            f"--python_out={root}",
            f"--pyi_out={root}",
            f"--grpc_python_out={root}",
            *sources,
        ]
        completed = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            raise RuntimeError(f"protoc failed ({completed.returncode}):\n{completed.stderr}")
        for api, version in APIS:
            for name in OUTPUTS:
                generated = root.joinpath(*_IMPORT_ROOT, api, version, name)
                results[Path(api, version, name)] = generated.read_bytes()
    return results


def stale_files() -> list[Path]:
    """Committed stub files that differ from (or are missing compared to) a fresh generation."""
    return [
        relative
        for relative, content in generate().items()
        if not (_GRPC_DIR / relative).is_file() or (_GRPC_DIR / relative).read_bytes() != content
    ]


def write() -> list[Path]:
    """Regenerate the stubs in place; return the files that changed."""
    changed = []
    for relative, content in generate().items():
        target = _GRPC_DIR / relative
        if target.is_file() and target.read_bytes() == content:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        init = target.parent / "__init__.py"
        if not init.exists():
            init.write_text('"""Generated gRPC stubs."""\n', encoding="utf-8")
        target.write_bytes(content)
        changed.append(relative)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="regenerate",
        description="Regenerate the kubelet gRPC stubs in nrop.api.grpc from nrop.api.proto.",
    )
    parser.add_argument(
        "--check", action="store_true", help="do not write; exit 1 if the committed stubs are stale"
    )
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files()
        for relative in stale:
            sys.stderr.write(f"stale: {relative}\n")
        return 1 if stale else 0
    for relative in write():
        sys.stderr.write(f"wrote: {relative}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
