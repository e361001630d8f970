// Giving the memory of ended workers back to the operating system.
//
// glibc gives each thread that allocates a malloc arena of its own and keeps
// an arena's free pages after the thread ends, for the next thread. A pool's
// workers free their whole subinterpreter when they end, but that memory
// stays in their arenas: a notebook that creates and closes pools for an
// hour grew by hundreds of megabytes of free pages (the chaos soak: +406 MB
// in 5 minutes, +8 MB once trimmed). Trimming once a pool's threads are all
// joined returns those pages, and the arenas the arena cache kept.
#pragma once

#include <cstddef>  // defines __GLIBC__ where glibc is the C library

#include "core/arena_cache.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace interp_rpc::core {

inline void return_free_memory_to_os() noexcept {
  release_cached_arenas();
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace interp_rpc::core
