#include "shoal/log.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>

#include "shoal/hex.h"
#include "shoal/utc_time.h"

namespace shoal {
namespace {

std::atomic<int> g_min_level{int(LogLevel::kInfo)};

// Length of the valid UTF-8 sequence at s[i], or 0 if there is none.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto cont = [&](size_t j) { return j < s.size() && (uint8_t(s[j]) & 0xC0) == 0x80; };
  uint8_t c = uint8_t(s[i]);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    uint8_t c1 = uint8_t(s[i + 1]);
    if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
    if (c == 0xED && c1 > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    uint8_t c1 = uint8_t(s[i + 1]);
    if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
    if (c == 0xF4 && c1 > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

void WriteLine(const std::string& line) {
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere left to report a failing stderr
    done += size_t(n);
  }
}

}  // namespace

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "unknown";
}

Result<LogLevel> ParseLogLevel(std::string_view text) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (text == LogLevelName(l)) return l;
  }
  return Status::InvalidArgument("log level '" + std::string(text.substr(0, 40)) +
                                 "' is not one of debug, info, warn, error");
}

void SetLogLevel(LogLevel level) { g_min_level.store(int(level), std::memory_order_relaxed); }

LogLevel GetLogLevel() { return LogLevel(g_min_level.load(std::memory_order_relaxed)); }

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(char(c));
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\r') {
      out->append("\\r");
    } else if (c == '\t') {
      out->append("\\t");
    } else if (c < 0x20 || c == 0x7f) {
      out->append("\\u00");
      out->push_back(hex::kLowerDigits[c >> 4]);
      out->push_back(hex::kLowerDigits[c & 0xf]);
    } else if (c >= 0x80) {
      size_t len = Utf8SequenceLength(s, i);
      if (len == 0) {
        out->append("\\ufffd");
        ++i;
        continue;
      }
      out->append(s.substr(i, len));
      i += len;
      continue;
    } else {
      out->push_back(char(c));
    }
    ++i;
  }
  out->push_back('"');
}

void LogValue::AppendJson(std::string* out) const {
  switch (kind_) {
    case Kind::kString:
      AppendJsonString(str_, out);
      return;
    case Kind::kInt:
      out->append(std::to_string(int_));
      return;
    case Kind::kUint:
      out->append(std::to_string(uint_));
      return;
    case Kind::kBool:
      out->append(int_ ? "true" : "false");
      return;
    case Kind::kDouble: {
      if (!std::isfinite(double_)) {
        out->append("null");  // JSON has no NaN or infinity
        return;
      }
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.17g", double_);
      out->append(buf);
      return;
    }
  }
}

std::string FormatLogLine(LogLevel level, std::string_view event,
                          std::initializer_list<LogField> fields, int64_t unix_ms) {
  std::string line;
  line.reserve(96 + 32 * fields.size());
  line.append("{\"ts\":\"").append(FormatUtcMillis(unix_ms)).append("\",\"level\":\"");
  line.append(LogLevelName(level)).append("\",\"event\":");
  AppendJsonString(event, &line);
  for (const LogField& f : fields) {
    line.push_back(',');
    AppendJsonString(f.key, &line);
    line.push_back(':');
    f.value.AppendJson(&line);
  }
  line.append("}\n");
  return line;
}

void Log(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) {
  if (int(level) < g_min_level.load(std::memory_order_relaxed)) return;
  WriteLine(FormatLogLine(level, event, fields, NowMs()));
}

}  // namespace shoal
