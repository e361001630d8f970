// Freed pymalloc arenas, kept for the next interpreter that needs one.
//
// pymalloc takes the memory of small objects from the operating system one
// arena (1 MiB) at a time, and hands an arena back as soon as its last object
// is freed (keeping at most one empty arena). Each subinterpreter has a
// pymalloc of its own, so in a pool one worker frees a list of a million
// floats (24 arenas) after its reply while the next call's worker builds
// one in 24 new arenas, whose pages the kernel zeroes and maps one fault at
// a time: about 7,500 page faults for each call that takes 2^20 floats.
//
// The cache sits between every pymalloc of the process and the allocator it
// used before (PyObject_SetArenaAllocator): a freed arena waits here, up to
// max_cached_arenas of them, for the next arena anyone asks for. It lends
// out nothing it did not get from that allocator and gives everything back
// to it, so whatever mix of the two an interpreter ends up calling, each
// arena goes back where it came from. Pools give the cached arenas back when
// they end (free_memory.hpp), as they give malloc's free pages back.
#pragma once

#include <cstddef>

namespace interp_rpc::core {

// At most this many arenas (1 MiB each) wait in the cache.
inline constexpr std::size_t max_cached_arenas = 64;

// Puts the cache in front of the process's arena allocator, once; later
// calls do nothing. Call it holding the main interpreter's GIL, before any
// worker starts, so that no interpreter of ours reads the allocator while it
// changes.
void install_arena_cache();

// Gives every cached arena back to the allocator the cache sits in front of.
void release_cached_arenas() noexcept;

// How many arenas wait in the cache now.
std::size_t cached_arena_count() noexcept;

}  // namespace interp_rpc::core
