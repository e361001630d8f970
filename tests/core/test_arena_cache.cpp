// The arena cache (core/arena_cache.hpp), driven through the process's arena
// allocator as pymalloc drives it. test_main.cpp installed it, as _core does.
#include <doctest/doctest.h>

#include <Python.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "core/arena_cache.hpp"

using namespace interp_rpc::core;

namespace {

constexpr std::size_t arena_size = std::size_t{1} << 20;  // pymalloc's, on 64-bit builds

PyObjectArenaAllocator installed() {
  PyObjectArenaAllocator a{};
  PyObject_GetArenaAllocator(&a);
  return a;
}

}  // namespace

TEST_CASE("an arena freed is the next arena lent, and the cache gives it back when released") {
  const PyObjectArenaAllocator a = installed();
  release_cached_arenas();
  void* first = a.alloc(a.ctx, arena_size);
  REQUIRE(first != nullptr);
  a.free(a.ctx, first, arena_size);
  CHECK(cached_arena_count() == 1);
  void* second = a.alloc(a.ctx, arena_size);
  CHECK(second == first);
  CHECK(cached_arena_count() == 0);
  a.free(a.ctx, second, arena_size);
  release_cached_arenas();
  CHECK(cached_arena_count() == 0);
}

TEST_CASE("the cache keeps at most max_cached_arenas, and frees the rest at once") {
  const PyObjectArenaAllocator a = installed();
  release_cached_arenas();
  std::vector<void*> arenas;
  for (std::size_t i = 0; i < max_cached_arenas + 5; ++i) {
    arenas.push_back(a.alloc(a.ctx, arena_size));
    REQUIRE(arenas.back() != nullptr);
  }
  for (void* arena : arenas) a.free(a.ctx, arena, arena_size);
  CHECK(cached_arena_count() == max_cached_arenas);
  release_cached_arenas();
  CHECK(cached_arena_count() == 0);
}

TEST_CASE("an arena of another size is never lent for this one") {
  const PyObjectArenaAllocator a = installed();
  release_cached_arenas();
  void* small = a.alloc(a.ctx, arena_size);
  void* large = a.alloc(a.ctx, 2 * arena_size);
  REQUIRE(small != nullptr);
  REQUIRE(large != nullptr);
  std::memset(large, 1, 2 * arena_size);  // all of it is ours to write
  a.free(a.ctx, small, arena_size);
  void* other = a.alloc(a.ctx, 2 * arena_size);
  CHECK(other != small);
  CHECK(cached_arena_count() == 1);
  a.free(a.ctx, other, 2 * arena_size);
  a.free(a.ctx, large, 2 * arena_size);
  release_cached_arenas();
}

TEST_CASE("threads that allocate and free at once never share an arena") {
  const PyObjectArenaAllocator a = installed();
  release_cached_arenas();
  constexpr int threads = 4;
  constexpr int rounds = 2000;
  std::atomic<int> shared{0};
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&a, &shared, t] {
      for (int i = 0; i < rounds; ++i) {
        auto* arena = static_cast<int*>(a.alloc(a.ctx, arena_size));
        if (arena == nullptr) continue;
        arena[0] = t;
        arena[1024] = i;  // another page
        std::this_thread::yield();
        if (arena[0] != t || arena[1024] != i) shared.fetch_add(1);
        a.free(a.ctx, arena, arena_size);
      }
    });
  }
  for (auto& thread : running) thread.join();
  CHECK(shared.load() == 0);
  CHECK(cached_arena_count() <= max_cached_arenas);
  release_cached_arenas();
}
