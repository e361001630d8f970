"""Notebook renderings of interp-rpc's errors: coloured text and HTML.

IPython shows an exception through its ``_render_traceback_()`` hook when the
exception has one; the extension installs these renderings as a custom
exception handler for the pool's errors (see magics.install_error_display).
"""

from __future__ import annotations

import html
from typing import Any

from interp_rpc._errors import CallTimeoutError, RemoteError, ShareabilityError

# ANSI colours close to IPython's own traceback theme.
_RED = "\x1b[31m"
_BOLD_RED = "\x1b[1;31m"
_GREEN = "\x1b[32m"
_CYAN = "\x1b[36m"
_YELLOW = "\x1b[33m"
_RESET = "\x1b[0m"


def _highlight_traceback(text: str) -> str:
    """Colour a traceback's text as IPython colours its own tracebacks."""
    try:
        from pygments import highlight
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import PythonTracebackLexer
    except ImportError:  # pragma: no cover - IPython always brings pygments
        return text
    return highlight(text, PythonTracebackLexer(), TerminalFormatter()).rstrip("\n")


def remote_error_header(err: RemoteError) -> str:
    return " · ".join(err.origin(quote_target=False))


def remote_error_lines(err: RemoteError) -> list[str]:
    """The error output of a RemoteError: a header, then the remote traceback."""
    header = remote_error_header(err)
    lines = [f"{_BOLD_RED}RemoteError{_RESET} in {_GREEN}{header}{_RESET}" if header
             else f"{_BOLD_RED}RemoteError{_RESET}"]
    lines.append(f"{_CYAN}The exception below was raised in the worker; it crossed as text, "
                 f"so isinstance() checks against {err.remote_type_name} do not apply.{_RESET}")
    lines.append("")
    lines += _highlight_traceback(err.remote_traceback.rstrip("\n")).splitlines()
    return lines


def remote_error_html(err: RemoteError) -> str:
    header = html.escape(remote_error_header(err))
    return (
        '<div class="interp-rpc-remote-error" style="border-left:4px solid #cf222e;'
        'padding:4px 10px">'
        f'<div><b style="color:#cf222e">RemoteError</b> in {header}</div>'
        f'<div><b>{html.escape(err.remote_type)}</b>: {html.escape(err.remote_message)}</div>'
        f'<pre style="margin:4px 0">{html.escape(err.remote_traceback.rstrip())}</pre></div>'
    )


def timeout_lines(err: CallTimeoutError) -> list[str]:
    return [f"{_BOLD_RED}CallTimeoutError{_RESET}: {_YELLOW}{err}{_RESET}"]


def shareability_lines(err: ShareabilityError) -> list[str]:
    """The error output of a ShareabilityError: the message, then the tree."""
    lines = [f"{_BOLD_RED}ShareabilityError{_RESET}: {err}".split("\n")[0]]
    lines.append("")
    lines += [_mark(line) for line in shareability_tree_text(err).splitlines()]
    lines.append("")
    lines += str(err).split("\n")[1:]
    return lines


def _mark(line: str) -> str:
    return line.replace("◀", f"{_BOLD_RED}◀{_RESET}")


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
                items.append(f'<li><code style="color:#57606a">{label}</code></li>')
                continue
            if depth == len(err.tree) - 1:
                culprit = (f' <span style="color:#cf222e">✗ {html.escape(err.value_type)}: '
                           f'{html.escape(err.reason)}</span>')
                items.append('<li class="interp-rpc-culprit"><code style="background:#ffebe9;'
                             f'color:#cf222e;font-weight:bold">{label}</code>{culprit}</li>')
            else:
                items.append(f'<li><code style="font-weight:bold">{label}</code>'
                             f'{level(depth + 1)}</li>')
        return f'<ul style="margin:0;list-style:none;padding-left:1.2em">{"".join(items)}</ul>'

    tree = level(0) if err.tree else (
        f'<code style="color:#cf222e">{html.escape(err.argument_path)}</code>')
    item = f" (map item {err.item_index})" if err.item_index is not None else ""
    return (
        '<div class="interp-rpc-shareability" style="border-left:4px solid #bf8700;'
        'padding:4px 10px">'
        f'<div><b style="color:#bf8700">Not shareable</b>{item}: '
        f'<code>{html.escape(err.argument_path)}</code></div>{tree}</div>'
    )


def bundle_for(err: BaseException) -> dict[str, Any] | None:
    """A display bundle that explains ``err`` better than its traceback, if any."""
    if isinstance(err, ShareabilityError):
        return {"text/html": shareability_html(err), "text/plain": shareability_tree_text(err)}
    return None


def traceback_lines(err: BaseException) -> list[str] | None:
    """The error output for one of our errors, or None for anything else."""
    if isinstance(err, RemoteError):
        return remote_error_lines(err)
    if isinstance(err, ShareabilityError):
        return shareability_lines(err)
    if isinstance(err, CallTimeoutError):
        return timeout_lines(err)
    return None
