// Structured logs: one parseable JSON object per line, escaped, filtered by
// level, and never interleaved between threads.
#include "shoal/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace shoal;

namespace {

constexpr int64_t kTime = 1795975200123;  // 2026-11-29T18:00:00.123Z

// Runs `body` with stderr redirected to a temporary file; returns its text.
template <typename F>
std::string CaptureStderr(F body) {
  char path[] = "/tmp/shoal-log-test-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  int saved = dup(STDERR_FILENO);
  dup2(fd, STDERR_FILENO);
  body();
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string text;
  lseek(fd, 0, SEEK_SET);
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) text.append(buf, size_t(n));
  close(fd);
  unlink(path);
  return text;
}

}  // namespace

TEST_CASE("a log line is one JSON object with the fields in order", "[log]") {
  std::string line = FormatLogLine(LogLevel::kInfo, "publish.commit",
                                   {{"ns", "team-a"},
                                    {"files", 12},
                                    {"bytes", uint64_t(1) << 40},
                                    {"rate", 0.5},
                                    {"delta", -3},
                                    {"forced", false},
                                    {"who", std::string("ci")}},
                                   kTime);
  CHECK(line ==
        "{\"ts\":\"2026-11-29T18:00:00.123Z\",\"level\":\"info\",\"event\":\"publish.commit\","
        "\"ns\":\"team-a\",\"files\":12,\"bytes\":1099511627776,\"rate\":0.5,\"delta\":-3,"
        "\"forced\":false,\"who\":\"ci\"}\n");
}

TEST_CASE("log strings are JSON-escaped and invalid UTF-8 is replaced", "[log]") {
  std::string line =
      FormatLogLine(LogLevel::kError, "x", {{"msg", "a\"b\\c\nd\te\x01 caf\xc3\xa9 \xff"}}, kTime);
  CHECK(line.find(R"("msg":"a\"b\\c\nd\te\u0001 café \ufffd")") != std::string::npos);
  CHECK(line.find('\n') == line.size() - 1);
  std::string nan = FormatLogLine(LogLevel::kWarn, "x", {{"v", 0.0 / 0.0}}, kTime);
  CHECK(nan.find("\"v\":null") != std::string::npos);
  CHECK(FormatLogLine(LogLevel::kWarn, "x", {{"s", Status::NotFound("gone")}}, kTime)
            .find("\"s\":\"not found: gone\"") != std::string::npos);
}

TEST_CASE("lines below the level are dropped", "[log]") {
  LogLevel saved = GetLogLevel();
  std::string out = CaptureStderr([] {
    SetLogLevel(LogLevel::kWarn);
    Log(LogLevel::kInfo, "quiet");
    Log(LogLevel::kWarn, "loud", {{"n", 1}});
  });
  SetLogLevel(saved);
  CHECK(out.find("quiet") == std::string::npos);
  CHECK(out.find("\"level\":\"warn\",\"event\":\"loud\",\"n\":1}\n") != std::string::npos);
  CHECK(ParseLogLevel("debug").value() == LogLevel::kDebug);
  CHECK(!ParseLogLevel("loud").ok());
}

TEST_CASE("concurrent log lines never interleave", "[log]") {
  const std::string payload(3000, 'p');
  std::string out = CaptureStderr([&] {
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 200; ++i) Log(LogLevel::kInfo, "t", {{"t", t}, {"p", payload}});
      });
    }
    for (auto& th : threads) th.join();
  });
  std::istringstream lines(out);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    REQUIRE(line.front() == '{');
    REQUIRE(line.back() == '}');
    REQUIRE(line.find(payload + "\"}") != std::string::npos);
  }
  CHECK(count == 1600);
}
