// Structured logs: one JSON object per line on stderr.
//
//   Log(LogLevel::kInfo, "publish.commit", {{"ns", "team-a"}, {"files", 12}});
//
// prints
//
//   {"ts":"2026-11-29T18:00:00.123Z","level":"info","event":"publish.commit","ns":"team-a","files":12}
//
// Each line goes out in a single write(2), so lines from many threads never
// interleave; nor do lines from several processes sharing a file opened for
// append, or a pipe for lines up to PIPE_BUF (4 KiB). Strings are JSON-escaped, and
// bytes that are not UTF-8 become U+FFFD.
//
// Thread-safety: every function here may be called from any thread.
#ifndef SHOAL_LOG_H_
#define SHOAL_LOG_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>

#include "shoal/status.h"

namespace shoal {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// "debug", "info", "warn" or "error".
const char* LogLevelName(LogLevel level);
Result<LogLevel> ParseLogLevel(std::string_view text);

// Lines below `level` are dropped. The default is kInfo.
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();

// One value of a log field: a string, an integer, a double or a bool.
class LogValue {
 public:
  enum class Kind { kString, kInt, kUint, kDouble, kBool };

  LogValue(const char* s) : kind_(Kind::kString), str_(s ? s : "") {}  // NOLINT
  LogValue(std::string_view s) : kind_(Kind::kString), str_(s) {}      // NOLINT
  LogValue(const std::string& s) : kind_(Kind::kString), str_(s) {}    // NOLINT
  LogValue(bool b) : kind_(Kind::kBool), int_(b) {}                    // NOLINT
  LogValue(double d) : kind_(Kind::kDouble), double_(d) {}             // NOLINT
  LogValue(float d) : kind_(Kind::kDouble), double_(d) {}              // NOLINT
  template <typename T,
            typename std::enable_if<std::is_integral<T>::value && !std::is_same<T, bool>::value,
                                    int>::type = 0>
  LogValue(T v)  // NOLINT: implicit by design
      : kind_(std::is_signed<T>::value ? Kind::kInt : Kind::kUint),
        int_(static_cast<int64_t>(v)),
        uint_(static_cast<uint64_t>(v)) {}
  LogValue(const Status& s) : kind_(Kind::kString), str_(s.ToString()) {}  // NOLINT

  // Appends this value as JSON to `out`.
  void AppendJson(std::string* out) const;

 private:
  Kind kind_;
  std::string str_;
  int64_t int_ = 0;
  uint64_t uint_ = 0;
  double double_ = 0;
};

struct LogField {
  std::string_view key;
  LogValue value;
};

// Writes one line if `level` is at or above the current level.
void Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields = {});

// The line Log would write at time `unix_ms`, newline included.
std::string FormatLogLine(LogLevel level, std::string_view event,
                          std::initializer_list<LogField> fields, int64_t unix_ms);

// Appends `s` to `out` as a quoted JSON string.
void AppendJsonString(std::string_view s, std::string* out);

}  // namespace shoal

#endif  // SHOAL_LOG_H_
