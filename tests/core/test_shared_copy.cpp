// shared_copy: a copy whose chunks a standing-by thread may take. Whoever
// copies what, every byte arrives; the helper leaves when told to.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/shared_copy.hpp"

using namespace interp_rpc::core;

namespace {

// Long enough that no test depends on it passing.
constexpr std::int64_t an_hour_ns = 3'600'000'000'000;
constexpr std::int64_t poll_ns = 1'000'000;

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  std::uint32_t x = 2463534242u;
  for (char& c : s) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  return s;
}

const auto never = [] { return false; };

}  // namespace

TEST_CASE("a copy with no helper copies every byte, at every size") {
  shared_copy copier;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, shared_copy_threshold - 1,
                              shared_copy_threshold, shared_copy_threshold + 12345,
                              (std::size_t{9} << 20) + 7}) {
    const std::string src = pattern(n);
    std::string dst(n, 'x');
    copier.copy(dst.data(), src.data(), n);
    CHECK(dst == src);
  }
  copier.finish();
}

TEST_CASE("copies shared with a standing-by helper arrive whole, one after another") {
  shared_copy copier;
  std::atomic<bool> helped{false};
  std::thread helper([&] {
    helped = copier.stand_by(now_ns() + an_hour_ns, never, poll_ns, 100'000);
  });
  for (const std::size_t n : {shared_copy_threshold, (std::size_t{16} << 20) + 3,
                              std::size_t{100}, std::size_t{5} << 20}) {
    const std::string src = pattern(n);
    std::string dst(n, 'x');
    copier.copy(dst.data(), src.data(), n);
    CHECK(dst == src);
  }
  copier.finish();
  helper.join();  // finish() made it leave: an hour's deadline did not
}

TEST_CASE("a helper that spins the whole wait still leaves at finish()") {
  shared_copy copier;
  std::thread helper([&] { copier.stand_by(now_ns() + an_hour_ns, never, poll_ns, an_hour_ns); });
  const std::string src = pattern(std::size_t{8} << 20);
  std::string dst(src.size(), 'x');
  copier.copy(dst.data(), src.data(), src.size());
  CHECK(dst == src);
  copier.finish();
  helper.join();
}

TEST_CASE("a helper leaves when told to, having copied nothing") {
  shared_copy copier;
  std::atomic<bool> leave{false};
  bool helped = true;
  std::thread helper([&] {
    helped = copier.stand_by(now_ns() + an_hour_ns, [&] { return leave.load(); }, poll_ns, 0);
  });
  leave = true;
  helper.join();
  CHECK_FALSE(helped);
  // The copy that comes after it still happens, without it.
  const std::string src = pattern(std::size_t{4} << 20);
  std::string dst(src.size(), 'x');
  copier.copy(dst.data(), src.data(), src.size());
  CHECK(dst == src);
}

TEST_CASE("a helper whose deadline passed does not wait") {
  shared_copy copier;
  CHECK_FALSE(copier.stand_by(now_ns() - 1, never, poll_ns, an_hour_ns));
}

TEST_CASE("a helper after finish() leaves at once") {
  shared_copy copier;
  copier.finish();
  CHECK_FALSE(copier.stand_by(now_ns() + an_hour_ns, never, poll_ns, 0));
}

TEST_CASE("a helper that arrives after the copy finds nothing left to take") {
  shared_copy copier;
  const std::string src = pattern(std::size_t{4} << 20);
  std::string dst(src.size(), 'x');
  copier.copy(dst.data(), src.data(), src.size());
  copier.finish();
  CHECK_FALSE(copier.stand_by(now_ns() + an_hour_ns, never, poll_ns, 0));
  CHECK(dst == src);
}
