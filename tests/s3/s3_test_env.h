// What the S3 tests know about the radosgw that tests/s3/radosgw.sh started:
// read from the file SHOAL_S3_ENV names. A missing file fails the test, so
// a broken fixture cannot pass silently.
#ifndef SHOAL_TESTS_S3_S3_TEST_ENV_H_
#define SHOAL_TESTS_S3_S3_TEST_ENV_H_

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "shoal/s3_origin.h"

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
    const char* path = std::getenv("SHOAL_S3_ENV");
    if (path) {
      std::ifstream in(path);
      std::string line;
      while (std::getline(in, line)) {
        size_t eq = line.find('=');
        if (eq != std::string::npos) e.vars[line.substr(0, eq)] = line.substr(eq + 1);
      }
    }
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

}  // namespace shoal_test

#endif  // SHOAL_TESTS_S3_S3_TEST_ENV_H_
