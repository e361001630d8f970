// Kernel subshells (JEP 91), as ipykernel 7 serves them.
//
// A subshell is a thread of its own with a queue of its own, running shell
// requests in the same interpreter and the same user namespace as the main
// shell: a shell request whose header has a "subshell_id" runs on that
// subshell's thread, in the order it arrived, while the main shell runs a
// cell. The control channel creates, deletes and lists them
// (create_subshell_request and so on, answered by shell_protocol).
//
// Threads.
// - create() and remove() are called on the control thread, list() on any;
// - deliver() on the server's thread that reads the shell socket and routes
//   each request: the idle main thread or the shell router (kernel_server);
// - each subshell's thread takes its requests one at a time and hands them
//   to the handler (shell_protocol), which holds the GIL only while Python
//   runs.
//
// Deleting a subshell lets the request it runs finish, then ends its thread;
// the requests still queued get no reply (ipykernel stops the subshell's
// loop, then joins its thread). At shutdown, stop() ends every subshell the
// same way, but waits only so long: a subshell whose cell goes on (a
// time.sleep(600)) would hold the shutdown, so the kernel process then exits
// without finalizing Python (see main.cpp).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <xeus/xmessage.hpp>

namespace interp_rpc::kernel {

class subshells {
 public:
  // Runs one request on the calling subshell thread.
  using handler = std::function<void(xeus::xmessage)>;
  // Runs a task on the main thread, between two of its requests, and returns
  // at once (kernel_server provides it).
  using main_poster = std::function<void(std::function<void()>)>;

  subshells() = default;
  subshells(const subshells&) = delete;
  subshells& operator=(const subshells&) = delete;
  // Threads that stop() left running are detached, never joined.
  ~subshells();

  // Before the first create().
  void set_handler(handler h);
  void set_main_poster(main_poster poster);
  // Called (on the control thread) after each create().
  void set_created_listener(std::function<void()> listener);

  // Starts a subshell; returns its id (a UUID, as ipykernel's).
  std::string create();
  // Ends the subshell `id` once the request it runs is over; false if there
  // is no such subshell.
  bool remove(const std::string& id);
  // The ids of the subshells, oldest first.
  std::vector<std::string> list() const;
  // Whether there is a subshell.
  bool any() const;

  // Queues `request` for subshell `id`; false (and `request` left alone) if
  // there is none.
  bool deliver(const std::string& id, xeus::xmessage& request);

  // On a subshell's thread: hands each request already queued for it to
  // `each`, in order, until none is left (stop_on_error's abort).
  void take_queued(const std::function<void(xeus::xmessage)>& each);

  // The id of the subshell whose thread calls, if any.
  static std::optional<std::string> current();

  // On a subshell's thread: runs `task` on the main thread and waits until
  // it has run, or `satisfied()` says the wait is over (the main thread may
  // be busy with a request that does what the task would do: start
  // IPython, which only the main thread does). False if the kernel stops
  // first.
  bool run_on_main(const std::function<void()>& task, const std::function<bool()>& satisfied);

  // At shutdown: no subshell starts another request; waits up to `grace`
  // for the running ones to end. True if every subshell thread has ended.
  bool stop(std::chrono::milliseconds grace);
  // After stop(): whether a subshell thread was still running.
  bool threads_left() const;

 private:
  struct subshell {
    std::string id;
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<xeus::xmessage> queue;  // guarded by mutex
    bool stopping = false;             // guarded by mutex
    bool ended = false;                // guarded by mutex
    std::thread thread;
  };

  static void run(const std::shared_ptr<subshell>& s, const handler& h);
  static void end(subshell& s);

  mutable std::mutex m_mutex;
  std::vector<std::shared_ptr<subshell>> m_subshells;  // guarded by m_mutex
  bool m_stopped = false;                               // guarded by m_mutex
  bool m_threads_left = false;                          // guarded by m_mutex
  handler m_handler;
  main_poster m_post_to_main;
  std::function<void()> m_created_listener;
};

}  // namespace interp_rpc::kernel
