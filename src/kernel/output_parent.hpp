// Which request the output of the calling thread belongs to.
//
// Every IOPub message carries a parent header; JupyterLab uses it to decide
// which cell shows the message. The main (shell) thread knows its request: the
// one it is handling; so does a subshell's thread (it pins its request, see
// thread_parent). Any other thread (a Python thread a cell started, a C++
// thread such as the pool's status publisher) has no request of its own, so its
// output goes to the latest execute request of the main shell or of any
// subshell, as with ipykernel: a thread that a subshell's cell starts prints
// into that cell. We cannot keep
// this in a ContextVar: threads of Python 3.14 (GIL build) start with an empty
// context, so they would publish with no parent at all.
#pragma once

#include <mutex>
#include <thread>

#include <xeus/xrequest_context.hpp>

namespace interp_rpc::kernel {

class output_parent {
 public:
  // The constructing thread becomes the main thread.
  output_parent();

  // Main thread, when an execute request starts: the parent of everything
  // until the next one.
  void set_execute_request(xeus::xrequest_context context);

  // A subshell's thread, when an execute request starts: the parent of other
  // threads' output until the next execute request on any shell. Its own
  // output is pinned already.
  void set_latest_execute_request(xeus::xrequest_context context);

  // Main thread, for a request that is not an execute request (a comm
  // message): its output goes to it, but output from other threads keeps going
  // to the current execute request. Returns the context to restore afterwards.
  xeus::xrequest_context exchange_main(xeus::xrequest_context context);

  // Any thread. The reference stays valid until this thread's next call.
  const xeus::xrequest_context& current() const;

  bool on_main_thread() const noexcept;

 private:
  std::thread::id m_main_thread;
  xeus::xrequest_context m_main;  // only the main thread reads or writes it
  mutable std::mutex m_mutex;
  xeus::xrequest_context m_execute;  // guarded by m_mutex, for other threads
};

// For its lifetime, the output of the constructing thread belongs to
// `context`, whatever the main thread runs next: a thread that publishes on
// behalf of one cell (the pool's live status view) keeps that cell as parent.
class thread_parent {
 public:
  explicit thread_parent(xeus::xrequest_context context);
  thread_parent(const thread_parent&) = delete;
  thread_parent& operator=(const thread_parent&) = delete;
  ~thread_parent();

 private:
  xeus::xrequest_context m_context;
  const xeus::xrequest_context* p_previous;
};

}  // namespace interp_rpc::kernel
