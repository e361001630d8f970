#include "core/live_view.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace interp_rpc::core {

namespace {

std::string escape_html(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}


std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

// ", 12.5 items/s, ETA 3.20 s" once something is done (the ETA while items remain).
std::string rate_and_eta(const live_progress& progress) {
  if (progress.done <= 0 || progress.elapsed_seconds <= 0) return "";
  const double rate = static_cast<double>(progress.done) / progress.elapsed_seconds;
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, rate < 10 ? "%.2f" : "%.1f", rate);
  std::string out = std::string(", ") + buffer + " items/s";
  if (progress.done < progress.total) {
    out += ", ETA " + seconds_text(static_cast<double>(progress.total - progress.done) / rate);
  }
  return out;
}

}  // namespace

std::int64_t map_item_counter::update(const call_log& log) {
  for (const call_record& r : log.records_after(m_last_seq)) {
    m_last_seq = r.seq;
    if (r.id >= m_first_call_id && r.outcome == call_outcome::replied && r.item_index >= 0) {
      m_done += r.item_count;
    }
  }
  return m_done;
}

std::string displayed_state(const worker_snapshot& w, double stuck_after_seconds) {
  return displayed_state(to_string(w.state), w.target, w.busy_seconds, stuck_after_seconds);
}

std::string displayed_state(std::string_view state, std::string_view target, double busy_seconds,
                            double stuck_after_seconds) {
  if (state == "busy" && target.starts_with(debug_session_prefix)) return "debugging";
  if (state == "busy" && busy_seconds >= stuck_after_seconds) return "stuck";
  return std::string(state);
}

// A state's colour marks its cell's left edge; the word itself keeps the body
// text colour. No theme colour of JupyterLab reads well as text in both its
// themes on a table's striped rows: its muted grey is 4.499:1 there in the
// light theme, its success green 3.9:1 and its error red 4.4:1 in the dark one
// (WCAG AA asks 4.5:1). A stuck worker is told from a dead one by its word.
std::string_view state_marker(std::string_view state) {
  if (state == "busy") return "var(--jp-success-color1, #1a7f37)";
  if (state == "debugging") return "var(--jp-warn-color1, #9a6700)";
  if (state == "stuck" || state == "dead") return "var(--jp-error-color1, #b42318)";
  return "transparent";
}

std::string seconds_text(double s) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, s < 10 ? "%.2f s" : "%.1f s", s);
  return buffer;
}

namespace {

void render_progress(const live_progress& progress, live_rendering& r) {
  const double fraction =
      std::clamp(static_cast<double>(progress.done) / static_cast<double>(progress.total), 0.0, 1.0);
  char percent[16];
  std::snprintf(percent, sizeof percent, "%.0f%%", fraction * 100);
  const std::string counts = std::to_string(progress.done) + "/" + std::to_string(progress.total);
  const std::string timing = seconds_text(progress.elapsed_seconds) + rate_and_eta(progress);
  r.html += "<div class=\"interp-rpc-progress\"><b>" + escape_html(progress.target) + "</b> " +
            counts + " items (" + percent + "), " + timing +
            "<div style=\"background:var(--jp-layout-color3, #d0d7de);height:8px;width:320px;"
            "border-radius:4px\"><div style=\"background:var(--jp-success-color1, #1a7f37);"
            "height:8px;border-radius:4px;width:" +
            std::to_string(static_cast<int>(fraction * 320)) + "px\"></div></div></div>";
  const int filled = static_cast<int>(fraction * 30);
  r.text += progress.target + " [" + std::string(static_cast<std::size_t>(filled), '#') +
            std::string(static_cast<std::size_t>(30 - filled), '.') + "] " + counts + " items (" +
            percent + "), " + timing + "\n";
}

constexpr int column_count = 6;

void render_row(const status_row& w, double stuck_after_seconds, live_rendering& r) {
  const std::string state = displayed_state(w.state, w.target, w.busy_seconds, stuck_after_seconds);
  const bool busy = w.state == "busy";
  const std::string item = busy && w.item_index >= 0 ? std::to_string(w.item_index) : "";
  const std::string running = busy ? seconds_text(w.busy_seconds) : "";
  const std::string target = busy ? w.target : (w.state == "dead" ? w.detail : "");
  r.html += "<tr class=\"interp-rpc-" + state + "\"><td>" + std::to_string(w.index) +
            "</td><td style=\"border-left:4px solid " + std::string(state_marker(state)) +
            ";font-weight:bold\">" + state +
            "</td><td>" + (target.empty() ? "" : "<code>" + escape_html(target) + "</code>") +
            "</td><td>" + item + "</td><td>" +
            running + "</td><td>" + std::to_string(w.calls_done) + "</td></tr>";
  r.text += pad(std::to_string(w.index), 8) + pad(state, 9) + pad(target, 32) + pad(item, 10) +
            pad(running, 13) + std::to_string(w.calls_done) + "\n";
}

}  // namespace

live_rendering render_status(const status_view& view, double stuck_after_seconds) {
  live_rendering r;
  r.html += "<div class=\"interp-rpc-live\">";
  if (view.progress.total > 0) render_progress(view.progress, r);
  if (view.table) {
    r.html += "<table class=\"interp-rpc-status\"><thead><tr><th>worker</th><th>state</th>"
              "<th>target</th><th>item</th><th>running for</th><th>calls done</th></tr></thead>"
              "<tbody>";
    r.text += "worker  state    target                          item      running for  calls done\n";
    auto group = view.groups.begin();
    for (std::size_t i = 0; i < view.rows.size(); ++i) {
      for (; group != view.groups.end() && group->first_row <= i; ++group) {
        r.html += "<tr class=\"interp-rpc-process\"><th colspan=\"" +
                  std::to_string(column_count) + "\" style=\"text-align:left\">" +
                  escape_html(group->title) + "</th></tr>";
        r.text += group->title + "\n";
      }
      render_row(view.rows[i], stuck_after_seconds, r);
    }
    if (view.rows.empty() && !view.empty_text.empty()) {
      r.html += "<tr><td colspan=\"" + std::to_string(column_count) + "\">" +
                escape_html(view.empty_text) + "</td></tr>";
      r.text += view.empty_text + "\n";
    }
    r.html += "</tbody></table>";
  }
  if (!view.note.empty()) {
    r.html += "<div class=\"interp-rpc-note\" style=\"color:var(--jp-content-font-color2, "
              "#59636e)\">" + escape_html(view.note) + "</div>";
    r.text += view.note + "\n";
  }
  r.html += "</div>";
  return r;
}

live_rendering render_live_view(const std::vector<worker_snapshot>& workers,
                                const live_progress& progress, double stuck_after_seconds,
                                std::string note) {
  status_view view;
  view.progress = progress;
  view.note = std::move(note);
  view.rows.reserve(workers.size());
  for (const auto& w : workers) {
    view.rows.push_back({w.index, to_string(w.state), w.target, w.item_index, w.busy_seconds,
                         w.calls_done, w.detail});
  }
  return render_status(view, stuck_after_seconds);
}

}  // namespace interp_rpc::core
