// Interrupting the processes a cell started (os.system, %%bash, subprocess,
// multiprocessing), as ipykernel does: its interrupt_request sends SIGINT to
// the kernel's whole process group when the kernel leads one, which it does
// when jupyter_client starts it (in a session of its own).
//
// Here the kernel itself is interrupted through the interrupter, not through
// the signal, so the SIGINT goes to every other process of the group:
// children that put themselves in a group of their own (a new session,
// a shell's job control) are left alone, as with ipykernel.
#pragma once

namespace interp_rpc::kernel {

// Any thread. Returns how many processes it signalled; does nothing when the
// kernel does not lead its process group (started from a shell's pipeline,
// say: the group is the shell's job).
int interrupt_child_processes() noexcept;

}  // namespace interp_rpc::kernel
