#include "kernel/subshells.hpp"

#include "core/thread_start.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <random>
#include <stdexcept>
#include <utility>

namespace interp_rpc::kernel {

namespace {

// How often a subshell waiting for the main thread looks whether the wait is
// over otherwise (the kernel stops, or what it waits for is done).
constexpr std::chrono::milliseconds wait_check_interval(20);

thread_local const std::string* t_current_id = nullptr;

// A random (version 4) UUID in its usual text form, as ipykernel's ids are.
std::string new_uuid() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  std::array<std::uint8_t, 16> bytes{};
  for (std::size_t i = 0; i < bytes.size(); i += 8) {
    const std::uint64_t word = generator();
    for (std::size_t j = 0; j < 8; ++j) {
      bytes[i + j] = static_cast<std::uint8_t>(word >> (8 * j));
    }
  }
  bytes[6] = static_cast<std::uint8_t>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<std::uint8_t>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::string text;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) {
      text += '-';
    }
    std::array<char, 3> hex{};
    std::snprintf(hex.data(), hex.size(), "%02x", bytes[i]);
    text += hex.data();
  }
  return text;
}

}  // namespace

subshells::~subshells() {
  std::lock_guard lock(m_mutex);
  for (const auto& s : m_subshells) {
    if (s->thread.joinable()) {
      s->thread.detach();
    }
  }
}

void subshells::set_handler(handler h) { m_handler = std::move(h); }

void subshells::set_main_poster(main_poster poster) { m_post_to_main = std::move(poster); }

void subshells::set_created_listener(std::function<void()> listener) {
  m_created_listener = std::move(listener);
}

std::string subshells::create() {
  auto s = std::make_shared<subshell>();
  s->id = new_uuid();
  std::lock_guard lock(m_mutex);
  if (m_stopped) {
    throw std::runtime_error("the kernel is shutting down");
  }
  // The thread keeps its subshell alive: a thread that stop() gave up on
  // may still finish its request after the list has forgotten it.
  s->thread = core::start_thread("subshell " + s->id + "'s thread", [s, h = m_handler] { run(s, h); });
  m_subshells.push_back(s);
  if (m_created_listener) {
    m_created_listener();
  }
  return s->id;
}

bool subshells::any() const {
  std::lock_guard lock(m_mutex);
  return !m_subshells.empty();
}

bool subshells::remove(const std::string& id) {
  std::shared_ptr<subshell> s;
  {
    std::lock_guard lock(m_mutex);
    const auto found = std::ranges::find_if(
        m_subshells, [&id](const std::shared_ptr<subshell>& each) { return each->id == id; });
    if (found == m_subshells.end()) {
      return false;
    }
    s = *found;
    m_subshells.erase(found);
  }
  end(*s);
  if (s->thread.joinable()) {
    s->thread.join();
  }
  return true;
}

std::vector<std::string> subshells::list() const {
  std::lock_guard lock(m_mutex);
  std::vector<std::string> ids;
  ids.reserve(m_subshells.size());
  for (const auto& s : m_subshells) {
    ids.push_back(s->id);
  }
  return ids;
}

bool subshells::deliver(const std::string& id, xeus::xmessage& request) {
  std::lock_guard lock(m_mutex);
  for (const auto& s : m_subshells) {
    if (s->id == id) {
      {
        std::lock_guard queue_lock(s->mutex);
        s->queue.push_back(std::move(request));
      }
      s->wake.notify_one();
      return true;
    }
  }
  return false;
}

void subshells::take_queued(const std::function<void(xeus::xmessage)>& each) {
  const std::optional<std::string> id = current();
  if (!id) {
    return;
  }
  std::shared_ptr<subshell> s;
  {
    std::lock_guard lock(m_mutex);
    for (const auto& candidate : m_subshells) {
      if (candidate->id == *id) {
        s = candidate;
      }
    }
  }
  if (!s) {
    return;
  }
  while (true) {
    std::optional<xeus::xmessage> next;
    {
      std::lock_guard lock(s->mutex);
      if (s->queue.empty()) {
        return;
      }
      next.emplace(std::move(s->queue.front()));
      s->queue.pop_front();
    }
    each(std::move(*next));
  }
}

std::optional<std::string> subshells::current() {
  if (t_current_id == nullptr) {
    return std::nullopt;
  }
  return *t_current_id;
}

bool subshells::run_on_main(const std::function<void()>& task,
                            const std::function<bool()>& satisfied) {
  struct completion {
    std::mutex mutex;
    std::condition_variable done_signal;
    bool done = false;
  };
  auto state = std::make_shared<completion>();
  if (!m_post_to_main) {
    return false;
  }
  m_post_to_main([state, task] {
    try {
      task();
    } catch (const std::exception& e) {
      std::cerr << "interp-rpc-kernel: a task of a subshell failed on the main thread: "
                << e.what() << std::endl;
    }
    {
      std::lock_guard lock(state->mutex);
      state->done = true;
    }
    state->done_signal.notify_all();
  });
  std::unique_lock lock(state->mutex);
  while (!state->done) {
    state->done_signal.wait_for(lock, wait_check_interval);
    if (satisfied()) {
      return true;
    }
    std::lock_guard stop_lock(m_mutex);
    if (m_stopped) {
      return state->done;
    }
  }
  return true;
}

bool subshells::stop(std::chrono::milliseconds grace) {
  std::vector<std::shared_ptr<subshell>> all;
  {
    std::lock_guard lock(m_mutex);
    m_stopped = true;
    all = m_subshells;
  }
  for (const auto& s : all) {
    end(*s);
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  bool all_ended = true;
  for (const auto& s : all) {
    std::unique_lock lock(s->mutex);
    if (!s->wake.wait_until(lock, deadline, [&s] { return s->ended; })) {
      all_ended = false;
      continue;
    }
    lock.unlock();
    if (s->thread.joinable()) {
      s->thread.join();
    }
  }
  std::lock_guard lock(m_mutex);
  m_threads_left = !all_ended;
  return all_ended;
}

bool subshells::threads_left() const {
  std::lock_guard lock(m_mutex);
  return m_threads_left;
}

void subshells::end(subshell& s) {
  {
    std::lock_guard lock(s.mutex);
    s.stopping = true;
  }
  s.wake.notify_all();
}

void subshells::run(const std::shared_ptr<subshell>& s, const handler& h) {
  t_current_id = &s->id;
  while (true) {
    std::optional<xeus::xmessage> request;
    {
      std::unique_lock lock(s->mutex);
      s->wake.wait(lock, [&s] { return s->stopping || !s->queue.empty(); });
      if (s->stopping) {
        break;
      }
      request.emplace(std::move(s->queue.front()));
      s->queue.pop_front();
    }
    try {
      h(std::move(*request));
    } catch (const std::exception& e) {
      std::cerr << "interp-rpc-kernel: error while handling a request on subshell " << s->id
                << ": " << e.what() << std::endl;
    }
  }
  t_current_id = nullptr;
  {
    std::lock_guard lock(s->mutex);
    s->ended = true;
  }
  s->wake.notify_all();
}

}  // namespace interp_rpc::kernel
