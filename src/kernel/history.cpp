#include "kernel/history.hpp"

#include <utility>

#include <pybind11/pybind11.h>
#include <pybind11_json/pybind11_json.hpp>

namespace py = pybind11;
using namespace pybind11::literals;

namespace interp_rpc::kernel {

ipython_history::ipython_history(std::function<py::object()> shell) : m_shell(std::move(shell)) {}

// Runs a query on IPython's HistoryManager; its entries are
// (session, line, input) or (session, line, (input, output)) tuples.
template <class Query>
nl::json ipython_history::answer(Query&& query) const {
  py::gil_scoped_acquire gil;
  try {
    const py::object history = m_shell().attr("history_manager");
    nl::json entries = pyjson::to_json(py::list(query(history)));
    // IPython numbers the current session 0 in some answers and by its
    // number in others; the frontend gets its number, always.
    const int current_session = history.attr("session_number").cast<int>();
    for (nl::json& entry : entries) {
      if (entry[0] == 0) {
        entry[0] = current_session;
      }
    }
    return nl::json{{"status", "ok"}, {"history", std::move(entries)}};
  } catch (py::error_already_set& e) {
    return nl::json{{"status", "error"},
                    {"ename", py::str(e.type().attr("__name__")).cast<std::string>()},
                    {"evalue", py::str(e.value()).cast<std::string>()},
                    {"traceback", nl::json::array()}};
  }
}

void ipython_history::configure_impl() {}

void ipython_history::store_inputs_impl(int, int, const std::string&, const std::string&) {}

nl::json ipython_history::get_tail_impl(int n, bool raw, bool output) const {
  return answer([&](const py::object& history) {
    return history.attr("get_tail")(n, "raw"_a = raw, "output"_a = output,
                                    "include_latest"_a = true);
  });
}

nl::json ipython_history::get_range_impl(int session, int start, int stop, bool raw,
                                         bool output) const {
  return answer([&](const py::object& history) {
    return history.attr("get_range")(session, start, stop, "raw"_a = raw, "output"_a = output);
  });
}

nl::json ipython_history::search_impl(const std::string& pattern, bool raw, bool output, int n,
                                      bool unique) const {
  return answer([&](const py::object& history) {
    return history.attr("search")(pattern, "raw"_a = raw, "output"_a = output, "n"_a = n,
                                  "unique"_a = unique);
  });
}

}  // namespace interp_rpc::kernel
