// history_request answered from IPython's own history.
//
// IPython already records every cell run with store_history (in its SQLite
// database, with outputs when asked), and %history reads it: answering from it
// gives the frontend the same sessions and line numbers, and searches that
// xeus's in-memory history manager does not implement.
#pragma once

#include <functional>

#include <pybind11/pybind11.h>
#include <xeus/xhistory_manager.hpp>

namespace interp_rpc::kernel {

class ipython_history final : public xeus::xhistory_manager {
 public:
  // shell returns the IPython shell (with the GIL held), starting it if need be.
  explicit ipython_history(std::function<pybind11::object()> shell);

 private:
  void configure_impl() override;
  // IPython stores the inputs itself, when the cell runs.
  void store_inputs_impl(int session, int line_num, const std::string& input,
                         const std::string& output) override;
  nl::json get_tail_impl(int n, bool raw, bool output) const override;
  nl::json get_range_impl(int session, int start, int stop, bool raw, bool output) const override;
  nl::json search_impl(const std::string& pattern, bool raw, bool output, int n,
                       bool unique) const override;

  template <class Query>
  nl::json answer(Query&& query) const;

  std::function<pybind11::object()> m_shell;
};

}  // namespace interp_rpc::kernel
