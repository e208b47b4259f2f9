// S3Origin when radosgw dies under it: retries, a clear failure, recovery.
// These tests kill and restart the fixture's radosgw (only its gateway
// process; the mon and osd stay up).
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>

#include "s3/s3_test_env.h"
#include "shoal/origin.h"
#include "shoal/sha256.h"

using namespace shoal;
using namespace shoal_test;

namespace {

// Collects bytes, and runs `hook` once after `after` bytes have arrived.
class HookSink : public ByteSink {
 public:
  HookSink(size_t after, std::function<void()> hook) : after_(after), hook_(std::move(hook)) {}
  Status Write(const uint8_t* data, size_t len) override {
    bytes_.append(reinterpret_cast<const char*>(data), len);
    if (!fired_ && bytes_.size() >= after_) {
      fired_ = true;
      hook_();
    }
    return Status::OK();
  }
  const std::string& bytes() const { return bytes_; }

 private:
  size_t after_;
  std::function<void()> hook_;
  bool fired_ = false;
  std::string bytes_;
};

std::string RgwCommand(const std::string& command) {
  const S3Env& env = TestS3();
  return "'" + env["SHOAL_S3_RGW_SCRIPT"] + "' " + command + " '" + env["SHOAL_S3_DIR"] +
         "' >/dev/null 2>&1";
}

// Makes sure radosgw is up again whatever a test did to it.
struct RestartAtExit {
  ~RestartAtExit() { std::system(RgwCommand("start-rgw").c_str()); }
};

}  // namespace

TEST_CASE("S3 GET retries when radosgw is killed mid-transfer, then fails clearly", "[s3][fault]") {
  RestartAtExit restart;
  OriginOptions opts = TestOptions("fault");
  opts.max_attempts = 3;
  opts.backoff_base_ms = 50;
  opts.backoff_max_ms = 200;
  opts.connect_timeout_ms = 1000;
  opts.io_timeout_ms = 3000;
  auto origin = OpenTestS3(opts);
  const std::string data = PatternBytes(48 << 20, 11);
  REQUIRE(origin->Put("victim", U8(data), data.size()).ok());

  HookSink sink(1 << 20, [] { RadosgwControl("kill-rgw"); });
  const auto start = std::chrono::steady_clock::now();
  Status s = origin->Get("victim", 0, data.size(), sink);
  const auto took = std::chrono::steady_clock::now() - start;
  INFO(s.ToString());
  CHECK(s.code() == Status::Code::kUnavailable);
  CHECK(s.message().find("gave up after 3 attempts") != std::string::npos);
  CHECK(s.message().find("s3://") != std::string::npos);
  CHECK(origin->counters().get.retries == 2);
  CHECK(sink.bytes().size() < data.size());
  CHECK(sink.bytes() == data.substr(0, sink.bytes().size()));  // no byte twice, none out of order
  CHECK(took < std::chrono::seconds(10));

  RadosgwControl("start-rgw");
  StringSink again;
  Status later = origin->Get("victim", 0, data.size(), again);
  INFO(later.ToString());
  REQUIRE(later.ok());
  CHECK(again.str() == data);
}

TEST_CASE("S3 GET resumes where it broke after radosgw restarts mid-transfer", "[s3][fault]") {
  RestartAtExit restart;
  OriginOptions opts = TestOptions("fault");
  opts.max_attempts = 4;
  opts.connect_timeout_ms = 2000;
  auto origin = OpenTestS3(opts);
  const std::string data = PatternBytes(40 << 20, 12);
  REQUIRE(origin->Put("phoenix", U8(data), data.size()).ok());

  // The gateway dies under the open response and is back before the client
  // notices, so the retry is what resumes the transfer.
  HookSink sink(2 << 20, [] {
    RadosgwControl("kill-rgw");
    RadosgwControl("start-rgw");
  });
  Status s = origin->Get("phoenix", 0, data.size(), sink);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(origin->counters().get.retries >= 1);
  CHECK(origin->counters().get.requests == 1 + origin->counters().get.retries);
  CHECK(sink.bytes().size() == data.size());
  CHECK(Sha256::Of(sink.bytes().data(), sink.bytes().size()) ==
        Sha256::Of(data.data(), data.size()));
}
