"""Regenerate Kubernetes' protobuf messages (``*_pb2.py``) and Go field facts for the embedded API server.

Usage, from the repository root::

    .venv/bin/python -m nrop.api.kubeproto.regenerate            # rewrite the committed modules
    .venv/bin/python -m nrop.api.kubeproto.regenerate --check    # exit 1 if they are stale
    .venv/bin/python -m nrop.api.kubeproto.regenerate --vendor DIR
        # first refresh the .proto copies and gofields.json from DIR, an upstream ``vendor/``

Sources are upstream's ``generated.proto`` files, kept verbatim under
``api/proto/k8s.io/<Go package>/generated.proto`` (:data:`PROTOS`: the groups the server
serves and what they import). They import each other as ``k8s.io/<Go package>/...``, a path
Python cannot import, so each is copied into a scratch tree at
``nrop/api/kubeproto/<Go package without k8s.io/, '-' as '_'>/generated.proto`` with its ``import`` lines
rewritten the same way, and compiled there by ``grpcio-tools``' protoc (``python -m
grpc_tools.protoc``, the ``test`` extra). Proto packages (``k8s.io.api.core.v1``...) are
untouched, so message names are upstream's.

A ``.proto`` does not say how Go encodes a field in JSON, nor whether its Go field is a
pointer, and both decide the bytes (``omitempty``; gogo writes non-pointer fields even when
zero). ``gofields.json`` records them per message field, read from the Go structs' tags
(``json:"..." protobuf:"...,name=x"``) in the same vendor tree: ``{message: {proto field:
[json name ("" when inlined), flags]}}`` with flags ``p`` pointer, ``e`` omitempty,
``z`` omitzero.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import GO_FIELDS, PROTOS

__all__ = ["generate", "go_fields", "main", "refresh_from_vendor", "stale_files", "write"]


_HERE = Path(__file__).resolve().parent
_PROTO_DIR = _HERE.parent / "proto"
_IMPORT_ROOT = "nrop/api/kubeproto/"


def _module_path(go_package: str) -> str:
    """``k8s.io/apiextensions-apiserver/x`` -> ``apiextensions_apiserver/x`` (below this package)."""
    return go_package.removeprefix("k8s.io/").replace("-", "_")


def _rewrite_imports(text: str) -> str:
    return re.sub(
        r'^import "k8s\.io/([^"]+)/generated\.proto";',
        lambda m: f'import "{_IMPORT_ROOT}{_module_path("k8s.io/" + m.group(1))}/generated.proto";',
        text,
        flags=re.M,
    )


def generate() -> dict[Path, bytes]:
    """Compile every proto in a scratch tree; map output paths (relative to this package) to bytes."""
    results: dict[Path, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="nrop-kubeproto-") as scratch:
        root = Path(scratch)
        sources = []
        for package in PROTOS:
            relative = Path(_IMPORT_ROOT, _module_path(package), "generated.proto")
            (root / relative).parent.mkdir(parents=True, exist_ok=True)
            text = (_PROTO_DIR / package / "generated.proto").read_text(encoding="utf-8")
            (root / relative).write_text(_rewrite_imports(text), encoding="utf-8")
            sources.append(relative.as_posix())
        command = [sys.executable, "-m", "grpc_tools.protoc", f"--proto_path={root}", f"--python_out={root}"]
        completed = subprocess.run(
            [*command, *sources], cwd=root, capture_output=True, text=True, check=False
        )
        if completed.returncode != 0:
            raise RuntimeError(f"protoc failed ({completed.returncode}):\n{completed.stderr}")
        for package in PROTOS:
            relative = Path(_module_path(package), "generated_pb2.py")
            results[relative] = (root / _IMPORT_ROOT / relative).read_bytes()
    results.update(_package_inits(list(results)))
    return results


def _package_inits(modules: list[Path]) -> dict[Path, bytes]:
    """An ``__init__.py`` per generated folder whose ``__all__`` lists its subpackages and module:
    the generated modules import each other across packages (hack/publicinterfaces.py)."""
    children: dict[Path, set[str]] = {}
    for module in modules:
        children.setdefault(module.parent, set()).add(module.stem)
        for folder in module.parent.parents[:-1]:
            children.setdefault(folder, set())
        for child in (module.parent, *module.parent.parents[:-2]):
            children[child.parent].add(child.name)
    inits = {}
    for folder, names in children.items():
        listed = "".join(f'    "{name}",\n' for name in sorted(names))
        text = f'"""Generated protobuf messages (regenerate.py)."""\n\n__all__ = [\n{listed}]\n'
        inits[folder / "__init__.py"] = text.encode()
    return inits


def stale_files() -> list[Path]:
    """Committed modules that differ from (or are missing compared to) a fresh generation."""
    return [
        relative
        for relative, content in generate().items()
        if not (_HERE / relative).is_file() or (_HERE / relative).read_bytes() != content
    ]


def write() -> list[Path]:
    """Regenerate the modules (and their packages' ``__init__.py``) in place; return what changed."""
    changed = []
    for relative, content in generate().items():
        target = _HERE / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_file() and target.read_bytes() == content:
            continue
        target.write_bytes(content)
        changed.append(relative)
    return changed


# -- Go field facts ------------------------------------------------------------------------------

_STRUCT = re.compile(r"^type (\w+) struct \{\n(.*?)^\}", re.M | re.S)
_FIELD = re.compile(r"^\s+(?:(\w+)\s+)?(\S+)\s+`([^`]*)`\s*(?://.*)?$", re.M)
_TAG = re.compile(r'(\w+):"([^"]*)"')
_PACKAGE = re.compile(r"^package ([\w.]+);", re.M)


def go_fields(package_dir: Path) -> dict[str, dict[str, list[str]]]:
    """The JSON name and flags of every protobuf field of the Go structs in one package folder."""
    proto_package = _PACKAGE.search((package_dir / "generated.proto").read_text(encoding="utf-8"))
    assert proto_package is not None, package_dir
    out: dict[str, dict[str, list[str]]] = {}
    for source in sorted(package_dir.glob("*.go")):
        if source.name.endswith("_test.go") or source.name.startswith(("zz_generated", "generated.")):
            continue
        for struct in _STRUCT.finditer(source.read_text(encoding="utf-8")):
            fields: dict[str, list[str]] = {}
            for line in _FIELD.finditer(struct.group(2)):
                name, go_type, tags = line.group(1), line.group(2), dict(_TAG.findall(line.group(3)))
                proto = tags.get("protobuf", "-")
                if proto == "-":
                    continue
                go_name = name or go_type.lstrip("*").rsplit(".", 1)[-1]
                # go-to-protobuf names a field after the Go one unless the tag says (``bytes,1,req``).
                proto_name = (
                    proto.split("name=", 1)[1].split(",", 1)[0]
                    if "name=" in proto
                    else go_name[0].lower() + go_name[1:]
                )
                json_name, *options = tags.get("json", go_name).split(",")
                if "inline" in options:
                    json_name = ""
                flags = ("p" if go_type.startswith("*") else "") + "".join(
                    flag for option, flag in (("omitempty", "e"), ("omitzero", "z")) if option in options
                )
                fields[proto_name] = [json_name, flags]
            if fields:
                out[f"{proto_package.group(1)}.{struct.group(1)}"] = fields
    return out


def refresh_from_vendor(vendor: Path) -> None:
    """Copy upstream's ``generated.proto`` files and rebuild ``gofields.json`` from a vendor tree."""
    facts: dict[str, dict[str, list[str]]] = {}
    for package in PROTOS:
        source = vendor / package
        target = _PROTO_DIR / package / "generated.proto"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / "generated.proto", target)
        facts.update(go_fields(source))
    text = json.dumps(dict(sorted(facts.items())), indent=0, sort_keys=False, separators=(",", ":"))
    (_HERE / GO_FIELDS).write_text(text + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="regenerate",
        description="Regenerate Kubernetes' protobuf messages in nrop.api.kubeproto from nrop.api.proto.",
    )
    parser.add_argument(
        "--check", action="store_true", help="do not write; exit 1 if the committed modules are stale"
    )
    parser.add_argument(
        "--vendor",
        type=Path,
        help="an upstream vendor/ folder: refresh the .proto copies and gofields.json from it first",
    )
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files()
        for relative in stale:
            sys.stderr.write(f"stale: {relative}\n")
        return 1 if stale else 0
    if args.vendor:
        refresh_from_vendor(args.vendor)
    for relative in write():
        sys.stderr.write(f"wrote: {relative}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
