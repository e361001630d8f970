"""The package's layers, read from its source: what each part may import.

- ``_worker/`` runs inside every worker, loaded by path before any package
  exists there: the standard library only.
- The pool (``_pool/``), the profiles (``profiling/``), and the public
  ``errors`` and ``records`` import neither the notebook layer, IPython nor
  the renderings, except the rich-display hooks (``_repr_*_``,
  ``_render_traceback_``), which call into ``display/`` when a frontend asks.
- ``display/`` renders without IPython or the notebook layer.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import interp_rpc

PACKAGE = Path(interp_rpc.__file__).parent
DISPLAY_HOOKS = ("_repr_", "_render_traceback_")


def modules(*parts: str) -> list[Path]:
    found: list[Path] = []
    for part in parts:
        path = PACKAGE / part
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
    return found


def imports(path: Path) -> Iterator[tuple[str, str | None]]:
    """(module imported, the function that imports it, or None at module
    level), outside ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text(), str(path))

    def walk(node: ast.AST, function: str | None) -> Iterator[tuple[str, str | None]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test) == "TYPE_CHECKING":
                yield from (found for other in child.orelse for found in walk(other, function))
                continue
            if isinstance(child, ast.Import):
                yield from ((alias.name, function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and not child.level:
                yield child.module, function
                yield from ((f"{child.module}.{alias.name}", function) for alias in child.names)
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) \
                else function
            yield from walk(child, inner)

    yield from walk(tree, None)


def relative(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


@pytest.mark.parametrize("path", modules("_worker"), ids=relative)
def test_the_worker_side_imports_the_standard_library_only(path: Path) -> None:
    outside = sorted({name for name, _ in imports(path)
                      if name.partition(".")[0] not in sys.stdlib_module_names
                      and name != "__future__"})
    assert not outside, f"{relative(path)} imports {outside}"


@pytest.mark.parametrize("path", modules("_pool", "profiling", "errors", "records"),
                         ids=relative)
def test_the_core_imports_no_notebook_ipython_or_rendering(path: Path) -> None:
    wrong = sorted({f"{name} (in {function or 'the module'})"
                    for name, function in imports(path)
                    if name.startswith(("interp_rpc.notebook", "IPython", "ipykernel"))
                    or (name.startswith("interp_rpc.display")
                        and not (function or "").startswith(DISPLAY_HOOKS))})
    assert not wrong, f"{relative(path)} imports {wrong}"


@pytest.mark.parametrize("path", modules("display"), ids=relative)
def test_renderings_import_no_ipython_or_notebook_layer(path: Path) -> None:
    wrong = sorted({name for name, _ in imports(path)
                    if name.startswith(("interp_rpc.notebook", "IPython", "ipykernel"))})
    assert not wrong, f"{relative(path)} imports {wrong}"


def test_the_rules_see_imports_inside_functions() -> None:
    """The reader finds an import wherever it is, or every rule above passes
    for nothing."""
    found = set(imports(PACKAGE / "errors.py"))
    assert ("interp_rpc.display.errors", "_repr_html_") in found
    assert ("interp_rpc._pool.remote_classes", "_restore_remote") in found


#: Private attributes the notebook layer may read on objects not its own,
#: each for its reason: IPython's rich-display hooks, and argparse's table of
#: option strings (magic_arguments builds on argparse, which has no public
#: way to ask whether a word is one of a parser's options).
NOTEBOOK_MAY_READ = ("_repr_mimebundle_", "_repr_html_", "_render_traceback_",
                     "_option_string_actions")


@pytest.mark.parametrize("path", modules("notebook"), ids=relative)
def test_the_notebook_layer_reads_no_private_attribute_of_a_pool(path: Path) -> None:
    """It drives pools through what they offer everyone (run_everywhere,
    log_position, render_status, ...), never their internals."""
    tree = ast.parse(path.read_text(), str(path))
    private = sorted({f"{ast.unparse(node.value)}.{node.attr} (line {node.lineno})"
                      for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and node.attr.startswith("_")
                      and not node.attr.startswith("__")
                      and ast.unparse(node.value) not in ("self", "cls")
                      and node.attr not in NOTEBOOK_MAY_READ})
    assert not private, f"{relative(path)} reads {private}"
