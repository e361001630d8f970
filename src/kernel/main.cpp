// interp-rpc-kernel: the "Python (interp-rpc)" Jupyter kernel process.
//
//   interp-rpc-kernel -f CONNECTION_FILE
//
// Exit code 0 after a shutdown request, 1 if the kernel cannot start.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <span>
#include <string>

#include <pybind11/embed.h>
#include <xeus-zmq/xzmq_context.hpp>
#include <xeus/xhelper.hpp>
#include <xeus/xkernel.hpp>
#include <xeus/xkernel_configuration.hpp>

#include "kernel/debugger.hpp"
#include "kernel/history.hpp"
#include "kernel/interpreter.hpp"
#include "kernel/interrupter.hpp"
#include "kernel/kernel_server.hpp"
#include "kernel/python_config.hpp"
#include "kernel/shell_protocol.hpp"
#include "kernel/subshells.hpp"

namespace py = pybind11;
namespace kernel = interp_rpc::kernel;

namespace {

// Why the kernel cannot go on, on stderr. Python must still be alive: the
// message of a Python error is made when it is asked for, with the GIL.
void say_why(const std::exception& e) {
  std::cerr << "interp-rpc-kernel: " << e.what() << std::endl;
}

// The kernel's run with Python alive; throws what ends it.
void serve(const std::string& connection_file) {
  // Declared before the kernel, whose server and shell use it.
  kernel::subshells subshell_queues;
  auto owned_interpreter = std::make_unique<kernel::interpreter>(connection_file);
  kernel::interpreter& interpreter = *owned_interpreter;
  xeus::xkernel xkernel(xeus::load_configuration(connection_file), xeus::get_user_name(),
                        xeus::make_zmq_context(), std::move(owned_interpreter),
                        kernel::with_shell_protocol(
                            kernel::make_kernel_server_builder(
                                interpreter.interrupts().cancel_fd(),
                                [&interpreter](std::span<const int> fds) {
                                  return interpreter.wait_while_idle(fds);
                                },
                                &subshell_queues),
                            interpreter, subshell_queues),
                        std::make_unique<kernel::ipython_history>(
                            [&interpreter] { return interpreter.shell(); }),
                        /*logger=*/nullptr, kernel::make_debugger_builder(interpreter));
  // Python outlives xeus: whichever way start() ends, detach while xeus's
  // comm manager is still alive.
  struct detach_on_exit {
    kernel::interpreter& interpreter;
    ~detach_on_exit() { interpreter.detach_from_kernel(); }
  } detach{interpreter};
  xkernel.start();
  if (subshell_queues.threads_left()) {
    // A subshell still runs a cell that did not end when the kernel stopped
    // (a time.sleep(600)): finalizing Python would wait for it, and its
    // thread would return into a kernel being destroyed. The server has sent
    // all output and replies by now; the process ends here, as a shutdown
    // must, and the operating system takes back the rest.
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    std::_Exit(0);
  }
}

// Returns the process's exit code.
int run(const std::string& connection_file, const char* argv0) {
  PyConfig config;
  kernel::init_python_config(config);
  const char* python_argv[] = {argv0};
  py::scoped_interpreter python(&config, 1, python_argv, /*add_program_dir_to_path=*/false);
  try {
    serve(connection_file);
  } catch (const std::exception& e) {
    say_why(e);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (xeus::should_print_version(argc, argv)) {
    std::cout << "interp-rpc-kernel " << INTERP_RPC_VERSION << '\n';
    return 0;
  }
  // Before any thread exists, so that the kernel's own threads (zmq's, the
  // server's) inherit it; the main thread unblocks it once they run, for the
  // cells and their children (see interrupter.hpp).
  kernel::block_sigint_in_this_thread();
  const std::string connection_file = xeus::extract_filename(argc, argv);
  if (connection_file.empty()) {
    std::cerr << "usage: " << argv[0] << " -f CONNECTION_FILE\n";
    return 2;
  }
  try {
    return run(connection_file, argv[0]);
  } catch (const std::exception& e) {
    say_why(e);  // before Python started, or while it finalized
    return 1;
  }
}
