"""ProcessPool's layers, read from its source: what each part may import.

- What a worker process loads (template.py, which forks it, child.py,
  framing.py, segments.py, stop_board.py) runs before any package exists
  there: the standard library only, and not typing (3 to 4 ms to import,
  for annotations only).
- The rest is core, like ``_pool/``: neither the notebook layer, IPython
  nor the renderings.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import interp_rpc
from interp_rpc import ProcessPool

PROCESS = Path(interp_rpc.__file__).parent / "process"
WORKER_SIDE = ("child.py", "framing.py", "segments.py", "stop_board.py", "template.py")

# The pool tests' reader of import statements (outside TYPE_CHECKING).
sys.path.insert(0, str(Path(__file__).parent.parent / "pool"))
from test_layering import imports  # noqa: E402


def _files(worker_side: bool) -> list[Path]:
    return [p for p in sorted(PROCESS.glob("*.py")) if (p.name in WORKER_SIDE) == worker_side]


@pytest.mark.parametrize("path", _files(True), ids=lambda p: p.name)
def test_what_a_worker_process_loads_imports_the_standard_library_only(path: Path) -> None:
    outside = {name for name, _ in imports(path)
               if name.split(".")[0] not in sys.stdlib_module_names}
    assert outside == set()


@pytest.mark.parametrize("path", _files(False), ids=lambda p: p.name)
def test_the_pool_side_imports_no_frontend(path: Path) -> None:
    frontends = ("interp_rpc.notebook", "interp_rpc.display", "IPython")
    assert [name for name, _ in imports(path) if name.startswith(frontends)] == []


def test_a_new_worker_process_has_not_imported_typing() -> None:
    with ProcessPool(workers=1) as pool:
        assert pool.call("sys.modules.__contains__", "typing") is False
