// The codes the engine shares with the Python layer. They are defined here
// only, and interp_rpc._core exports them (STATUS_*, REPLY_*).
#pragma once

namespace interp_rpc::core {

// What became of a call, as engine.call() and CallHandle.status report it.
enum class call_status : int {
  replied = 0,      // the worker ran it; reply_kind says how it went
  worker_died = 1,  // its worker died running it, or before it ran
  cancelled = 2,    // removed from the queue before it ran
  pool_broken = 3,  // every worker died before it ran
  timed_out = 4,    // the caller stopped waiting; it may still run
  closed = 5,       // refused: the pool is closed
  broken = 6,       // refused: no worker can run it (every one, or the pinned one, is dead)
};

// Reply kinds the engine itself produces. The worker's Python code defines
// the others (interp_rpc/_worker/wire.py), with the same meaning for 0.
inline constexpr int reply_kind_ok = 0;             // success
inline constexpr int reply_kind_engine_error = 100;  // the bootstrap itself failed

}  // namespace interp_rpc::core
