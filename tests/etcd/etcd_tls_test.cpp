// EtcdClient to a member that serves clients over HTTPS.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <string>

#include "etcd/etcd_test_env.h"
#include "kv/etcd_client.h"
#include "support/env_file.h"

using shoal::Status;
using shoal::tracker::EtcdClient;
using shoal::tracker::EtcdOptions;

namespace {

// One TLS member from etcd_cluster.sh start-tls in a fresh folder, stopped
// (and the folder removed) on destruction.
class TlsMember {
 public:
  TlsMember() {
    char tmpl[] = "/tmp/shoal-etcd-tls-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    script_ = shoal_test::EtcdEnv()["SHOAL_ETCD_SCRIPT"];
    REQUIRE(std::system(("'" + script_ + "' start-tls '" + dir_ + "' 2>/dev/null").c_str()) == 0);
    env_ = shoal::testing::ReadEnvFile((dir_ + "/etcd.env").c_str());
  }
  ~TlsMember() { (void)std::system(("'" + script_ + "' stop '" + dir_ + "'").c_str()); }
  std::string operator[](const std::string& k) { return env_[k]; }

 private:
  std::string dir_, script_;
  std::map<std::string, std::string> env_;
};

}  // namespace

TEST_CASE("etcd client speaks HTTPS to a member whose CA it is given", "[etcd]") {
  TlsMember member;
  EtcdOptions o;
  o.endpoints = {member["SHOAL_ETCD_ENDPOINTS"]};
  REQUIRE(o.endpoints[0].rfind("https://", 0) == 0);
  o.ca_file = member["SHOAL_ETCD_CA_FILE"];
  auto etcd = shoal_test::OpenTestEtcd(o);
  auto rev = etcd->Put("tls/key", "secret");
  INFO(rev.status().ToString());
  REQUIRE(rev.ok());
  auto got = etcd->Get("tls/key");
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->value == "secret");
  CHECK(etcd->Ping().ok());

  // Without the CA, the self-signed certificate is refused, and said so.
  o.ca_file = "";
  auto untrusting = shoal_test::OpenTestEtcd(o);
  auto refused = untrusting->Get("tls/key");
  INFO(refused.status().ToString());
  CHECK(refused.status().code() == Status::Code::kPermissionDenied);
  CHECK(refused.status().message().find("certificate") != std::string::npos);

  o.ca_file = "/nonexistent/ca.pem";
  CHECK(!EtcdClient::Open(o).ok());
}
