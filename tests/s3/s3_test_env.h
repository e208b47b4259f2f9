// What the S3 tests know about the radosgw that tests/s3/radosgw.sh started:
// read from the file SHOAL_S3_ENV names. A missing file fails the test, so
// a broken fixture cannot pass silently.
#ifndef SHOAL_TESTS_S3_S3_TEST_ENV_H_
#define SHOAL_TESTS_S3_S3_TEST_ENV_H_

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "shoal/s3_origin.h"
#include "support/env_file.h"

namespace shoal_test {

struct S3Env {
  std::map<std::string, std::string> vars;
  std::string operator[](const std::string& k) const {
    auto it = vars.find(k);
    return it == vars.end() ? "" : it->second;
  }
};

inline const S3Env& TestS3() {
  static const S3Env env = [] {
    S3Env e;
    e.vars = shoal::testing::ReadEnvFile(std::getenv("SHOAL_S3_ENV"));
    return e;
  }();
  REQUIRE(!env["SHOAL_S3_ENDPOINT"].empty());  // run through ctest, or set SHOAL_S3_ENV
  return env;
}

// Options for the test bucket under `prefix`, with quick retries.
inline shoal::OriginOptions TestOptions(const std::string& prefix) {
  const S3Env& env = TestS3();
  shoal::OriginOptions o;
  o.url = "s3://" + env["SHOAL_S3_BUCKET"] + "/" + prefix;
  o.endpoint = env["SHOAL_S3_ENDPOINT"];
  o.region = env["SHOAL_S3_REGION"];
  o.access_key = env["SHOAL_S3_ACCESS_KEY"];
  o.secret_key = env["SHOAL_S3_SECRET_KEY"];
  o.backoff_base_ms = 50;
  o.backoff_max_ms = 500;
  return o;
}

inline std::unique_ptr<shoal::S3Origin> OpenTestS3(const shoal::OriginOptions& o) {
  auto r = shoal::NewS3Origin(o);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return std::move(r).value();
}

// Runs radosgw.sh with `command` ("kill-rgw" or "start-rgw") on the test cluster.
inline void RadosgwControl(const std::string& command) {
  const S3Env& env = TestS3();
  std::string cmd = "'" + env["SHOAL_S3_RGW_SCRIPT"] + "' " + command + " '" + env["SHOAL_S3_DIR"] +
                    "' >/dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
}

inline std::string PatternBytes(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

inline const uint8_t* U8(const std::string& s) {
  return reinterpret_cast<const uint8_t*>(s.data());
}

// radosgw's usage log for the test user: `field` ("bytes_sent" or
// "bytes_received") summed over `categories` ("get_obj", "put_obj", ...).
// An independent count of what the origin served or took in.
inline uint64_t RadosgwUsageBytes(const std::string& field,
                                  const std::vector<std::string>& categories) {
  std::string wanted;
  for (const std::string& c : categories) wanted += (wanted.empty() ? "\"" : ",\"") + c + "\"";
  const std::string cmd =
      "timeout 30 radosgw-admin -c '" + TestS3()["SHOAL_S3_DIR"] +
      "/ceph.conf' usage show --uid=test --show-log-entries=false 2>/dev/null | "
      "/usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); "
      "print(sum(c[\"" +
      field +
      "\"] for u in d.get(\"summary\", []) for c in u[\"categories\"] "
      "if c[\"category\"] in (" +
      wanted + ",)))'";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  unsigned long long v = 0;
  int got = std::fscanf(p, "%llu", &v);
  ::pclose(p);
  REQUIRE(got == 1);
  return v;
}

// The same once the log stops moving: it flushes every second, so this waits
// until two reads 1.5 s apart agree (at most 15 s).
inline uint64_t SettledRadosgwUsageBytes(const std::string& field,
                                         const std::vector<std::string>& categories) {
  uint64_t last = RadosgwUsageBytes(field, categories);
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    uint64_t now = RadosgwUsageBytes(field, categories);
    if (now == last) return now;
    last = now;
  }
  return last;
}

}  // namespace shoal_test

#endif  // SHOAL_TESTS_S3_S3_TEST_ENV_H_
