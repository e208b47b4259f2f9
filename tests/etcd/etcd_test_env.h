// What the etcd tests know about the cluster tests/etcd/etcd_cluster.sh
// started: read from the file SHOAL_ETCD_ENV names, again at each call
// (a restarted member rewrites it). A missing file fails the test, so a
// broken fixture cannot pass silently.
#ifndef SHOAL_TESTS_ETCD_ETCD_TEST_ENV_H_
#define SHOAL_TESTS_ETCD_ETCD_TEST_ENV_H_

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kv/etcd_client.h"
#include "kv/etcd_kv.h"
#include "support/env_file.h"

namespace shoal_test {

inline std::map<std::string, std::string> EtcdEnv() {
  auto vars = shoal::testing::ReadEnvFile(std::getenv("SHOAL_ETCD_ENV"));
  REQUIRE(!vars["SHOAL_ETCD_ENDPOINTS"].empty());  // run through ctest, or set SHOAL_ETCD_ENV
  return vars;
}

// The three members' client URLs, in member order (1, 2, 3).
inline std::vector<std::string> EtcdEndpoints() {
  std::vector<std::string> out;
  std::stringstream ss(EtcdEnv()["SHOAL_ETCD_ENDPOINTS"]);
  std::string e;
  while (std::getline(ss, e, ',')) out.push_back(e);
  return out;
}

// Runs etcd_cluster.sh `command` on the test cluster (with `member` if
// given); returns its standard output, trimmed. Fails the test if it fails.
inline std::string EtcdControl(const std::string& command, const std::string& member = "") {
  auto env = EtcdEnv();
  std::string cmd = "'" + env["SHOAL_ETCD_SCRIPT"] + "' " + command + " '" + env["SHOAL_ETCD_DIR"] +
                    "' " + member + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[256];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  INFO(cmd);
  REQUIRE(pclose(p) == 0);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

inline std::unique_ptr<shoal::tracker::EtcdClient> OpenTestEtcd(
    shoal::tracker::EtcdOptions options = {}) {
  if (options.endpoints.empty()) options.endpoints = EtcdEndpoints();
  auto c = shoal::tracker::EtcdClient::Open(options);
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  return std::move(c).value();
}

// A key prefix no other test or earlier run uses: the cluster lives for the
// whole ctest run.
inline std::string FreshPrefix(const std::string& test) {
  std::random_device rd;
  return "test/" + test + "/" + std::to_string(rd()) + "/";
}

// A registry engine on the test cluster under `prefix`, as a tracker of a
// fleet opens it.
inline std::unique_ptr<shoal::tracker::EtcdKv> OpenEtcdKv(const std::string& prefix) {
  shoal::tracker::EtcdOptions o;
  o.endpoints = EtcdEndpoints();
  auto kv = shoal::tracker::EtcdKv::Open(o, prefix);
  REQUIRE(kv.ok());
  return std::move(kv).value();
}

}  // namespace shoal_test

#endif  // SHOAL_TESTS_ETCD_ETCD_TEST_ENV_H_
