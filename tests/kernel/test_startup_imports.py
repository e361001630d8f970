"""What the kernel keeps out of IPython's import at startup (see
src/kernel/startup_imports.hpp): IPython's terminal front end and jedi are not
loaded, yet each is there for a cell that uses it."""

from __future__ import annotations

from conftest import Kernel


def test_the_first_cell_finds_neither_the_terminal_front_end_nor_jedi(kernel: Kernel) -> None:
    result = kernel.execute(
        "import sys\n"
        "print(sorted(m for m in ('prompt_toolkit', 'jedi', 'IPython.terminal.interactiveshell')"
        " if m in sys.modules))")
    assert result.status == "ok", result.reply["content"]
    assert result.stream() == "[]\n"


def test_the_terminal_front_end_is_imported_when_a_cell_uses_it(kernel: Kernel) -> None:
    result = kernel.execute(
        "import sys, IPython\n"
        "from IPython.terminal.embed import InteractiveShellEmbed\n"
        "import IPython.terminal.embed as embed_module\n"
        "print(InteractiveShellEmbed.__name__, embed_module.__file__.endswith('embed.py'),\n"
        "      sys.modules['IPython.terminal.embed'] is embed_module,\n"
        "      embed_module.InteractiveShellEmbed is InteractiveShellEmbed,\n"
        "      IPython.embed is embed_module.embed, 'prompt_toolkit' in sys.modules)")
    assert result.status == "ok", result.reply["content"]
    assert result.stream() == "InteractiveShellEmbed True True True True True\n"


def test_ipython_embed_taken_before_the_import_hands_over_to_the_real_one(
        kernel: Kernel) -> None:
    # `from IPython import embed` at startup holds the stand-in's function;
    # calling it calls the real module's embed (replaced here, so that no
    # terminal shell starts).
    result = kernel.execute(
        "from IPython import embed\n"
        "import sys, IPython.terminal.embed\n"
        "IPython.terminal.embed.InteractiveShellEmbed  # the real module is imported\n"
        "real = sys.modules['IPython.terminal.embed']\n"
        "assert real.__file__.endswith('embed.py')\n"
        "real.embed = lambda *args, **kwargs: ('real', args, kwargs)\n"
        "print(embed(1, header='x'))\n")
    assert result.status == "ok", result.reply["content"]
    assert result.stream() == "('real', (1,), {'header': 'x'})\n"


def test_a_cell_can_import_jedi(kernel: Kernel) -> None:
    result = kernel.execute("import jedi\nprint(jedi.__name__, hasattr(jedi, 'Interpreter'))")
    assert result.status == "ok", result.reply["content"]
    assert result.stream() == "jedi True\n"


def test_completion_still_answers(kernel: Kernel) -> None:
    kernel.execute("interp_rpc_value = 1")
    content = kernel.complete("interp_rpc_va")
    assert content["status"] == "ok"
    assert "interp_rpc_value" in content["matches"]


def test_turning_jedi_on_in_the_completer_still_works(kernel: Kernel) -> None:
    kernel.execute("class Box:\n    interp_rpc_field = 1\nbox = Box()")
    turned = kernel.execute("%config IPCompleter.use_jedi = True")
    assert turned.status == "ok", turned.reply["content"]
    content = kernel.complete("box.interp_rpc_f")
    assert content["status"] == "ok", content
    assert {"box.interp_rpc_field", "interp_rpc_field"} & set(content["matches"]), content
    loaded = kernel.execute("import sys\nprint('jedi' in sys.modules)")
    assert loaded.stream() == "True\n"
