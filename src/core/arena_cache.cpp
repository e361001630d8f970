#include "core/arena_cache.hpp"

#include <Python.h>

#include <array>
#include <mutex>

namespace interp_rpc::core {

namespace {

struct cached_arena {
  void* address = nullptr;
  std::size_t size = 0;
};

// Never destroyed: an interpreter finalized after static destructors run
// (in an application that embeds Python) still frees its arenas through it.
struct arena_cache {
  std::mutex mutex;
  std::array<cached_arena, max_cached_arenas> arenas{};
  std::size_t count = 0;
  PyObjectArenaAllocator underlying{};
};

arena_cache& cache() {
  static auto* const instance = new arena_cache();
  return *instance;
}

// pymalloc asks for one size only: the scan ends at the newest arena, whose
// pages are the likeliest still in the CPU's caches.
void* allocate(void* /*ctx*/, std::size_t size) noexcept {
  arena_cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    for (std::size_t i = c.count; i-- > 0;) {
      if (c.arenas[i].size != size) continue;
      void* address = c.arenas[i].address;
      c.arenas[i] = c.arenas[--c.count];
      return address;
    }
  }
  return c.underlying.alloc(c.underlying.ctx, size);
}

void free_arena(void* /*ctx*/, void* address, std::size_t size) noexcept {
  arena_cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    if (c.count < max_cached_arenas) {
      c.arenas[c.count++] = {address, size};
      return;
    }
  }
  c.underlying.free(c.underlying.ctx, address, size);
}

}  // namespace

void install_arena_cache() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    arena_cache& c = cache();
    PyObject_GetArenaAllocator(&c.underlying);
    PyObjectArenaAllocator caching{nullptr, &allocate, &free_arena};
    PyObject_SetArenaAllocator(&caching);  // copied: the local may go
  });
}

void release_cached_arenas() noexcept {
  arena_cache& c = cache();
  std::array<cached_arena, max_cached_arenas> released{};
  std::size_t n = 0;
  {
    std::lock_guard lock(c.mutex);
    n = c.count;
    for (std::size_t i = 0; i < n; ++i) released[i] = c.arenas[i];
    c.count = 0;
  }
  for (std::size_t i = 0; i < n; ++i) {
    c.underlying.free(c.underlying.ctx, released[i].address, released[i].size);
  }
}

std::size_t cached_arena_count() noexcept {
  arena_cache& c = cache();
  std::lock_guard lock(c.mutex);
  return c.count;
}

}  // namespace interp_rpc::core
