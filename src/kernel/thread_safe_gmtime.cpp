// gmtime() for the whole kernel process, with one result buffer per thread.
//
// xeus stamps every message header with the time (xeus::make_header ->
// iso8601_now), through C's gmtime(), which returns a pointer to one static
// struct tm. The kernel builds messages on several threads at once (the main
// thread, the stream captures, the IOPub and control threads), so one thread
// could format the time another thread's call just wrote there, or a mix of
// both. Defined in the executable, this gmtime takes precedence over the C
// library's for every library of the process, xeus included, and gives each
// thread its own buffer, as gmtime_r() does.
#include <ctime>

// Exported from the executable (CMakeLists.txt), where the dynamic linker
// looks first.
extern "C" __attribute__((visibility("default"))) std::tm* gmtime(
    const std::time_t* time) noexcept {
  thread_local std::tm result;
  return ::gmtime_r(time, &result);
}
