"""nrop.api.packageyaml builds the same documents as ``yaml.safe_load`` for every YAML file shipped."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nrop.api import packageyaml

_ROOT = Path(__file__).resolve().parents[3]
_SHIPPED = sorted(
    path for folder in ("api", "localcluster", "operator") for path in (_ROOT / folder).rglob("*.yaml")
)


def test_some_files_are_shipped() -> None:
    assert len(_SHIPPED) >= 10


@pytest.mark.parametrize("path", _SHIPPED, ids=lambda p: str(p.relative_to(_ROOT)))
def test_same_document_as_pyyaml(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert packageyaml.load(text) == yaml.safe_load(text)
