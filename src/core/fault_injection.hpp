// Faults that only a hook inside the engine can inject, for the fault tests.
//
// Creating a worker's interpreter cannot be made to fail from outside: the
// python3.14 executable defines Py_NewInterpreterFromConfig itself, so an
// LD_PRELOAD library cannot interpose it. The hook is compiled in only with
// INTERP_RPC_FAULT_INJECTION, which test builds define (INTERP_RPC_TESTS=ON);
// a release build has no hook and ignores the environment.
//
//   INTERP_RPC_FAIL_INTERPRETER=<worker index>
//       The first time a worker of that index creates its interpreter in this
//       process, the creation fails inside CPython, once: the worker hands
//       Py_NewInterpreterFromConfig a configuration that CPython rejects after
//       it has begun building the interpreter, so CPython's own failure path
//       runs, as it would for a real failure.
//
//   INTERP_RPC_FAIL_REPLY_COPY=<n>
//       The nth reply (of setup() or of a call) that the engine copies out of
//       a worker's interpreter in this process fails to allocate
//       (std::bad_alloc), once. An address-space limit cannot aim at that
//       copy: the worker's pickling of a reply needs as much memory, and
//       fails first.
#pragma once

namespace interp_rpc::core::fault_injection {

// The environment variables above.
inline constexpr const char* fail_interpreter_variable = "INTERP_RPC_FAIL_INTERPRETER";
inline constexpr const char* fail_reply_copy_variable = "INTERP_RPC_FAIL_REPLY_COPY";

// Whether this creation of worker `index`'s interpreter must fail. True at
// most once per process.
bool fail_interpreter_creation(int index) noexcept;

// Whether this copy of a reply must fail (counts the copies).
bool fail_reply_copy() noexcept;

}  // namespace interp_rpc::core::fault_injection
