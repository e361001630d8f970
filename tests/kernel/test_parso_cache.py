"""The kernel's guard of parso's cache files (interp_rpc_kernel/parso_cache.py):
a file is replaced whole or not at all, and one that does not load is a miss."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from interp_rpc_kernel.parso_cache import guard_parso_cache

SOURCE = Path("/nowhere/module.py")


@pytest.fixture
def cache() -> Any:
    guard_parso_cache()
    return importlib.import_module("parso.cache")


def test_a_write_that_fails_leaves_the_file_it_would_replace(cache: Any, tmp_path: Path) -> None:
    cache._save_to_file_system("grammar", SOURCE, SimpleNamespace(node="whole"),
                               cache_path=tmp_path)
    with pytest.raises(Exception, match="pickle"):
        cache._save_to_file_system("grammar", SOURCE, SimpleNamespace(node=lambda: None),
                                   cache_path=tmp_path)
    assert cache._load_from_file_system("grammar", SOURCE, 0, cache_path=tmp_path) == "whole"
    files = [p.name for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 1 and not files[0].startswith(".")  # no temporary file left


def test_a_file_cut_short_is_a_miss(cache: Any, tmp_path: Path) -> None:
    cache._save_to_file_system("grammar", SOURCE, SimpleNamespace(node="x" * 1000),
                               cache_path=tmp_path)
    (written,) = tmp_path.rglob("*.pkl")
    written.write_bytes(written.read_bytes()[:100])
    assert cache._load_from_file_system("grammar", SOURCE, 0, cache_path=tmp_path) is None

