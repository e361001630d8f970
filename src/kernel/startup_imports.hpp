// What importing IPython loads that a kernel never uses, kept out of startup.
//
// Importing IPython is most of the time to a kernel's first result, and a
// third of it is IPython's terminal front end and jedi:
// - `import IPython` runs `from .terminal.embed import embed`, which imports
//   the terminal shell, prompt_toolkit and the terminal debugger;
// - IPython's completer imports jedi if it is installed, though no cell
//   needs it before the first completion.
// The kernel imports IPython with a stand-in for IPython.terminal.embed that
// imports the real module the first time anything of it is used (calling
// IPython.embed() too), and with jedi kept from loading during that import
// only: a cell's own `import jedi` works, and the completer imports it on its
// first use.
#pragma once

#include <string_view>

#include <pybind11/pybind11.h>

namespace interp_rpc::kernel {

// Puts the stand-in for IPython.terminal.embed in sys.modules; before IPython
// is imported. Nothing happens if the real module is there already.
void stand_in_for_terminal_embed();

// Once IPython is imported: the stand-in becomes IPython.terminal's `embed`
// attribute too, as the real module would be (a module found in sys.modules
// is not bound to its package by the import system).
void bind_terminal_embed_stand_in();

// Once IPython is imported: IPython's completer gets a stand-in for jedi
// that imports it when used. (IPython's default for IPCompleter.use_jedi
// follows whether jedi was imported with it; the shell turns it on itself.)
void lend_jedi_to_the_completer();

// Whether the kernel's import of IPython must not load this module.
bool kept_out_of_startup(std::string_view module);

}  // namespace interp_rpc::kernel
