"""Reading a magic's line the way IPython's own magics do (%timeit, %time).

Options come first and are split like a shell command line, so a quoted value
loses its quotes exactly once: ``--init "import m; m.setup()"`` gives the
code ``import m; m.setup()``. Everything after the options is taken verbatim:
a Python expression or statement, with its spaces, quotes, ``-1`` and ``#``
untouched. The options are then checked by the magic's argparse parser
(IPython's magic_arguments), which turns a bad one into a one-line UsageError.
"""

from __future__ import annotations

import argparse
import io
import re
import shlex
from typing import Any

from IPython.core.error import UsageError

HELP_FLAGS = ("-h", "--help")

_FIRST_WORD = re.compile(r"\s*(\S+)(.*)\Z", re.DOTALL)


def _takes_value(parser: argparse.ArgumentParser, token: str) -> bool:
    """Whether the option ``token`` needs the next token as its value; a
    UsageError naming it when the magic has no such option."""
    if token.startswith("--"):
        name, attached = token.partition("=")[0], "=" in token
    else:
        name, attached = token[:2], len(token) > 2
    action = parser._option_string_actions.get(name)
    if action is None:
        raise UsageError(f"unknown option {token.split('=')[0]!r}; see --help")
    return action.nargs != 0 and not attached


def split(parser: argparse.ArgumentParser, line: str) -> tuple[list[str], str]:
    """(option tokens with quotes removed, the rest of the line verbatim).

    Options end at the first word that does not start with "-", or after "--".
    """
    stream = io.StringIO(line)
    lexer = shlex.shlex(stream, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    tokens: list[str] = []
    needs_value = False
    while True:
        start = len(line) - len(line[stream.tell():].lstrip())
        if start >= len(line):
            if needs_value:
                raise UsageError(f"option {tokens[-1]!r} needs a value")
            return tokens, ""
        if not needs_value and not line.startswith("-", start):
            return tokens, line[start:].strip()
        try:
            token = lexer.get_token()
        except ValueError as exc:  # an unclosed quote
            raise UsageError(f"cannot read the options: {exc}") from None
        assert token is not None
        if needs_value:
            tokens.append(token)
            needs_value = False
        elif token == "--":
            return tokens, line[stream.tell():].strip()
        elif token in HELP_FLAGS:
            tokens.append(token)
        else:
            tokens.append(token)
            needs_value = _takes_value(parser, token)


def plain_help[F](magic: F) -> F:
    """Decorator, above @magic_arguments(): the magic's usage without colour.
    Python 3.14's argparse colours help when the terminal it started in can,
    which leaves escape codes in the docstring that ``%magic?`` shows."""
    parser = magic.parser  # type: ignore[attr-defined]
    parser.color = False
    magic.__doc__ = parser.format_help()
    return magic


def parse(magic: Any, line: str) -> tuple[argparse.Namespace | None, str]:
    """(parsed options, verbatim rest) for a magic decorated with
    magic_arguments; (None, "") after printing its usage for -h/--help
    (what ``%magic?`` shows, which names the magic with its %)."""
    parser: argparse.ArgumentParser = magic.parser
    tokens, rest = split(parser, line)
    if any(token in HELP_FLAGS for token in tokens):
        # IPython's help formatter writes the usage as a reST literal block.
        print("usage: " + parser.format_help().removeprefix("::\n\n  ").rstrip("\n"))
        return None, ""
    return parser.parse_args(tokens), rest


def first_word(text: str) -> tuple[str, str]:
    """(first whitespace-separated word, the rest verbatim), or ("", "")."""
    match = _FIRST_WORD.match(text)
    if match is None:
        return "", ""
    return match.group(1), match.group(2).strip()


def positive(name: str, value: float | None) -> None:
    """A UsageError naming ``name`` unless ``value`` is None or above 0."""
    if value is not None and not value > 0:
        raise UsageError(f"{name} must be greater than 0, not {value:g}")
