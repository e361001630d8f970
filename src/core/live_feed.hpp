// What a live display reads from a running pool, shareable across binaries.
//
// interp_rpc._core hands it to the kernel inside a PyCapsule named
// live_feed_capsule_name; the kernel (which links the same engine library)
// then reads worker snapshots and totals from its own threads, with no GIL.
// The shared pointers keep the pool's state alive as long as a reader holds
// them.
#pragma once

#include <memory>

#include "core/call_log.hpp"
#include "core/status_board.hpp"

namespace interp_rpc::core {

inline constexpr const char* live_feed_capsule_name = "interp_rpc.live_feed";

struct live_feed {
  std::shared_ptr<const status_board> board;
  std::shared_ptr<const call_log> log;
};

}  // namespace interp_rpc::core
