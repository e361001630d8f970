#include "kernel/output_parent.hpp"

#include <utility>

namespace interp_rpc::kernel {

namespace {
thread_local const xeus::xrequest_context* t_pinned = nullptr;
}  // namespace

thread_parent::thread_parent(xeus::xrequest_context context)
    : m_context(std::move(context)), p_previous(std::exchange(t_pinned, &m_context)) {}

thread_parent::~thread_parent() { t_pinned = p_previous; }

output_parent::output_parent() : m_main_thread(std::this_thread::get_id()) {}

void output_parent::set_execute_request(xeus::xrequest_context context) {
  m_main = context;
  std::lock_guard lock(m_mutex);
  m_execute = std::move(context);
}

void output_parent::set_latest_execute_request(xeus::xrequest_context context) {
  std::lock_guard lock(m_mutex);
  m_execute = std::move(context);
}

xeus::xrequest_context output_parent::exchange_main(xeus::xrequest_context context) {
  return std::exchange(m_main, std::move(context));
}

const xeus::xrequest_context& output_parent::current() const {
  if (t_pinned != nullptr) {
    return *t_pinned;
  }
  if (on_main_thread()) {
    return m_main;
  }
  // A per-thread copy, so the caller may keep using it while the main thread
  // moves on to the next request.
  thread_local xeus::xrequest_context copy;
  std::lock_guard lock(m_mutex);
  copy = m_execute;
  return copy;
}

bool output_parent::on_main_thread() const noexcept {
  return std::this_thread::get_id() == m_main_thread;
}

}  // namespace interp_rpc::kernel
