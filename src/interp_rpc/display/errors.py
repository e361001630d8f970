"""How interp-rpc's errors look: coloured text for tracebacks, HTML for rich displays.

Pure functions of the error objects, with no IPython import, so that the
error classes can offer ``_render_traceback_`` (IPython's hook, as ipyparallel
uses it) and ``_repr_html_`` (any rich frontend: Jupyter, marimo, web apps)
without the core depending on the notebook layer.

HTML uses JupyterLab's CSS variables with light-theme fallbacks, so it reads
in light and dark themes and anywhere else.
"""

from __future__ import annotations

import builtins
import html
import os
import re
import traceback
from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from interp_rpc.errors import InterpRpcError, RemoteError, ShareabilityError
    from interp_rpc.notebook.errors import ParallelCellError

# Error text is bold where it needs emphasis, never coloured: JupyterLab shows
# an error on a red background, where no ANSI colour passes WCAG AA contrast
# in both its light and dark themes; the theme's own text colour does.
_BOLD = "\x1b[1m"
_RESET = "\x1b[0m"

# Colours of the HTML renderings: JupyterLab's theme variables, chosen so text
# passes WCAG AA in Lab's light and dark themes, with fallbacks that pass on a
# white page. (Lab's orange fails on white, so warnings are not orange text.)
TEXT = "var(--jp-content-font-color1, #1f2328)"
MUTED = "var(--jp-content-font-color2, #57606a)"
ERROR = "var(--jp-error-color1, #b42318)"
ERROR_BACKGROUND = "var(--jp-rendermime-error-background, #fdecea)"
BORDER_WARN = "var(--jp-warn-color1, #bf8700)"  # a border only, never text

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Frames of the machinery between a cell and our code: IPython's magic
# dispatch and the shells that embed it. Users did not write them.
_MACHINERY_MODULES = ("IPython.", "ipykernel.", "interp_rpc_kernel", "interp_rpc")


def worker_ranges(indices: Iterable[int]) -> str:
    """"worker 2", "workers 0-3", "workers 0, 2, 5-7": sorted, runs collapsed."""
    ordered = sorted(set(indices))
    runs: list[str] = []
    start = previous = None
    for index in [*ordered, None]:
        if previous is not None and index == previous + 1:
            previous = index
            continue
        if start is not None:
            # ":d": a cluster's worker is an int whose str() says where it lives.
            runs.append(f"{start:d}" if start == previous else f"{start:d}-{previous:d}")
        start = previous = index
    noun = "worker" if len(ordered) == 1 else "workers"
    return f"{noun} {', '.join(runs)}"


def _cell_name(filename: str) -> str | None:
    """"Cell In[3]" for a notebook cell's code, as IPython names it; IPython
    puts get_ipython in builtins while it runs code, so no import is needed."""
    get_ipython = getattr(builtins, "get_ipython", None)
    compiler = getattr(get_ipython(), "compile", None) if callable(get_ipython) else None
    format_code_name = getattr(compiler, "format_code_name", None)
    if format_code_name is None:
        return None
    name = format_code_name(filename)
    return f"{name[0]} {name[1]}" if name else None


def local_frames(tb: TracebackType | None) -> list[str]:
    """The caller's side of the traceback (which line of the cell or script
    made the call), without the frames of IPython's magic machinery or ours."""
    lines: list[str] = []
    for frame, line_number in traceback.walk_tb(tb):
        module = str(frame.f_globals.get("__name__", ""))
        filename = frame.f_code.co_filename
        if (module.startswith(_MACHINERY_MODULES) or filename.startswith("<decorator-gen")
                or os.path.abspath(filename).startswith(_PACKAGE_DIR + os.sep)):
            continue
        summary = traceback.FrameSummary(filename, line_number, frame.f_code.co_name)
        cell = _cell_name(filename)
        where = f"{cell}, line {line_number}" if cell else f'File "{filename}", line {line_number}'
        lines.append(f"  {where}, in {frame.f_code.co_name}")
        if summary.line:
            lines.append(f"    {summary.line.strip()}")
    if lines:
        lines.insert(0, "Traceback (most recent call last):")
    return lines


def _after_local_frames(err: BaseException, body: list[str]) -> list[str]:
    local = local_frames(err.__traceback__)
    return [*local, "", *body] if local else body


# ----------------------------------------------------------- remote errors

def remote_error_header(err: RemoteError) -> str:
    return " · ".join(err.origin(quote_target=False))


# A frame's line in a traceback: '  File "name", line 3, in f'.
_FRAME_LINE = re.compile(r'^(\s*)File "([^"]+)", line (\d+)')


def remote_traceback(err: RemoteError) -> str:
    """The remote traceback, its notebook cells named as IPython names them
    ("Cell In[3], line 2"): the workers run their source under the cell's
    own filename (functions sent by value, %%parallel cells)."""
    def rename(match: re.Match[str]) -> str:
        cell = _cell_name(match.group(2))
        return f"{match.group(1)}{cell}, line {match.group(3)}" if cell else match.group(0)

    return "\n".join(_FRAME_LINE.sub(rename, line)
                     for line in err.remote_traceback.rstrip("\n").splitlines())


def catching_note(err: RemoteError) -> str:
    """What ``except`` catches this error, as is true for it: combined with
    its original class when the caller resolves it, else RemoteError only."""
    from interp_rpc._pool.remote_classes import never_combined
    from interp_rpc.errors import RemoteError

    if type(err) is not RemoteError:  # RemoteError[Original]
        return (f"Raised in the worker; here it is {type(err).__qualname__}, so both "
                f"'except {err.remote_qualname}' and 'except RemoteError' catch it.")
    if never_combined(err.remote_module, err.remote_qualname):
        return (f"Raised in the worker; a remote {err.remote_type} does not exit or stop "
                "anything here, so only 'except RemoteError' catches it.")
    return (f"Raised in the worker; {err.remote_type} cannot be imported here, so only "
            "'except RemoteError' catches it (err.remote_type names the original).")


def refusal_fixes(errors: Iterable[object]) -> list[str]:
    """For errors caused by a C extension that refused to load in a
    subinterpreter: one line each, naming it and the fix, in bold."""
    from interp_rpc.errors import RemoteError, refusal_fix

    modules = sorted({m for e in errors
                      if isinstance(e, RemoteError) and (m := e.refused_module) is not None})
    return [f"{_BOLD}{refusal_fix(module)}{_RESET}" for module in modules]


def remote_error_body(err: RemoteError, where: str | None = None, *,
                      fix_first: bool = True) -> list[str]:
    """A header naming where it was raised, then the remote traceback;
    ``fix_first``: headed by the fix when a C extension's refusal to load
    in a subinterpreter caused it."""
    header = remote_error_header(err) if where is None else where
    lines = refusal_fixes([err]) if fix_first else []
    lines.append(f"{_BOLD}RemoteError{_RESET} in {header}" if header
                 else f"{_BOLD}RemoteError{_RESET}")
    lines.append(catching_note(err))
    lines.append("")
    lines += remote_traceback(err).splitlines()
    return lines


def remote_error_lines(err: RemoteError) -> list[str]:
    """What a notebook shows for a RemoteError: the fix, when a C extension's
    refusal caused it, then the local frames, then the body."""
    fixes = refusal_fixes([err])
    body = _after_local_frames(err, remote_error_body(err, fix_first=False))
    return [*fixes, "", *body] if fixes else body


def remote_error_html(err: RemoteError) -> str:
    from interp_rpc.errors import refusal_fix

    header = html.escape(remote_error_header(err))
    module = err.refused_module
    fix = "" if module is None else f"<div><b>{html.escape(refusal_fix(module))}</b></div>"
    return (
        f'<div class="interp-rpc-remote-error" style="border-left:4px solid {ERROR};'
        f'padding:4px 10px;color:{TEXT}">{fix}'
        f'<div><b style="color:{ERROR}">RemoteError</b> in {header}</div>'
        f'<div><b>{html.escape(err.remote_type)}</b>: {html.escape(err.remote_message)}</div>'
        f'<div style="color:{MUTED}">{html.escape(catching_note(err))}</div>'
        f'<pre style="margin:4px 0;color:{TEXT}">'
        f'{html.escape(remote_traceback(err).rstrip())}</pre></div>'
    )


# ------------------------------------------------------------ timeouts

def error_lines(err: InterpRpcError) -> list[str]:
    """What a notebook shows for an interp-rpc error that has no display of
    its own (a timeout, a target that does not resolve, a dead worker)."""
    return _after_local_frames(err, [f"{_BOLD}{type(err).__name__}{_RESET}: {err}"])


# ------------------------------------------------------- shareability

def shareability_lines(err: ShareabilityError) -> list[str]:
    """The message, the tree of the way down to the culprit (once), then the help."""
    message = str(err).split("\n")
    lines = [f"{_BOLD}ShareabilityError{_RESET}: {message[0]}", ""]
    lines += [line.replace("◀", f"{_BOLD}◀{_RESET}")
              for line in shareability_tree_text(err).splitlines()]
    lines.append("")
    lines += message[1:]
    return _after_local_frames(err, lines)


def shareability_tree_text(err: ShareabilityError) -> str:
    """The way down to the culprit as an indented tree, with the path marked."""
    if not err.tree:
        return f"{err.argument_path}  ◀ {err.value_type}: {err.reason}"
    lines: list[str] = []
    indent = ""
    for depth, (container, segments, chosen) in enumerate(err.tree):
        if depth == 0:
            lines.append(f"{container}")
        last_level = depth == len(err.tree) - 1
        for position, segment in enumerate(segments):
            on_path = position == chosen
            branch = "└── " if position == len(segments) - 1 else "├── "
            text = f"{indent}{branch}{segment}"
            if on_path:
                text += f"  ◀ {err.value_type}: {err.reason}" if last_level else "  ◀"
            lines.append(text)
        indent += "    "
    return "\n".join(lines)


def shareability_html(err: ShareabilityError) -> str:
    """The arguments as a tree, the branch to the culprit highlighted."""

    def level(depth: int) -> str:
        _, segments, chosen = err.tree[depth]
        items = []
        for position, segment in enumerate(segments):
            label = html.escape(segment)
            if position != chosen:
                items.append(f'<li><code style="color:{MUTED};background:none">{label}</code></li>')
                continue
            if depth == len(err.tree) - 1:
                culprit = (f' <span style="color:{ERROR}">✗ {html.escape(err.value_type)}: '
                           f'{html.escape(err.reason)}</span>')
                items.append('<li class="interp-rpc-culprit"><code style="background:'
                             f'{ERROR_BACKGROUND};color:{TEXT};font-weight:bold">{label}</code>'
                             f'{culprit}</li>')
            else:
                items.append(f'<li><code style="font-weight:bold;color:{TEXT};background:none">'
                             f'{label}</code>{level(depth + 1)}</li>')
        return f'<ul style="margin:0;list-style:none;padding-left:1.2em">{"".join(items)}</ul>'

    tree = level(0) if err.tree else (
        f'<code style="color:{ERROR}">{html.escape(err.argument_path)}</code>')
    item = f" (map item {err.item_index})" if err.item_index is not None else ""
    return (
        f'<div class="interp-rpc-shareability" style="border-left:4px solid {BORDER_WARN};'
        f'padding:4px 10px;color:{TEXT}">'
        f'<div><b style="color:{ERROR}">Not shareable</b>{item}: '
        f'<code>{html.escape(err.argument_path)}</code></div>{tree}</div>'
    )


# ------------------------------------------------------------ %%parallel

def _error_key(error: BaseException) -> tuple[str, ...]:
    """What makes two workers' errors the same error, shown once."""
    from interp_rpc.errors import RemoteError

    if isinstance(error, RemoteError):
        return (error.remote_type, error.remote_message, error.remote_traceback)
    return (type(error).__name__, str(error))


def group_by_worker[T](outcomes: dict[int, T], key: Any = None) -> list[tuple[list[int], T]]:
    """Workers whose outcome is the same, in order of their first worker."""
    groups: dict[Any, tuple[list[int], T]] = {}
    for index in sorted(outcomes):
        value = outcomes[index]
        group = groups.setdefault(key(value) if key else value, ([], value))
        group[0].append(index)
    return list(groups.values())


def parallel_cell_lines(err: ParallelCellError) -> list[str]:
    """Each distinct error once, headed by the workers that raised it."""
    from interp_rpc.errors import RemoteError

    lines = [f"{_BOLD}ParallelCellError{_RESET}: {err}"]
    for workers, error in group_by_worker(err.errors, key=_error_key):
        lines.append("")
        where = f"{worker_ranges(workers)} · %%parallel"
        if isinstance(error, RemoteError):
            lines += remote_error_body(error, where=where, fix_first=False)
        else:
            lines.append(f"{_BOLD}{type(error).__name__}{_RESET} in {where}: {error}")
    # The fix first, once for all the workers, above even the cell's frames.
    fixes = refusal_fixes(err.errors.values())
    body = _after_local_frames(err, lines)
    return [*fixes, "", *body] if fixes else body
