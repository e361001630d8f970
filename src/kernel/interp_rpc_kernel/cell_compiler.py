"""IPython's side of the cells' file names (cell_files.py): the compiler
that names each cell's code by its file, and the cleanup transform that
keeps a cell's lines where the debugger's breakpoints are."""

from __future__ import annotations

from IPython.core.compilerop import CachingCompiler
from IPython.core.inputtransformer2 import leading_empty_lines

from interp_rpc_kernel.cell_files import cell_file_name, keeping_leading_empty_lines


def drop_leading_empty_lines(lines: list[str]) -> list[str]:
    """IPython's cleanup transform, but while a debugger session runs: then
    the cell's lines stay where the breakpoints set on its text are."""
    if keeping_leading_empty_lines.is_set():
        return lines
    dropped: list[str] = leading_empty_lines(lines)
    return dropped


def install_cleanup_transform(transforms: list[object]) -> None:
    """Puts drop_leading_empty_lines in the place of IPython's transform."""
    if leading_empty_lines in transforms:
        transforms[transforms.index(leading_empty_lines)] = drop_leading_empty_lines


class CellCompiler(CachingCompiler):
    """IPython's compiler, naming each cell's code by its file."""

    def get_code_name(self, raw_code: str, transformed_code: str, number: int) -> str:
        return cell_file_name(raw_code)
