// FleetMembers against the real etcd cluster: trackers joining and leaving
// are counted, a lease etcd forgot is granted again, and each tracker's
// share of the origin budget keeps the fleet within it.
#include "agents/fleet_members.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "etcd/etcd_test_env.h"

using shoal::tracker::FleetMembers;
using shoal::tracker::OriginBudgetShare;
using Clock = std::chrono::steady_clock;

namespace {

std::unique_ptr<FleetMembers> JoinOk(const std::string& prefix, const std::string& address) {
  auto f = FleetMembers::Join(shoal_test::OpenTestEtcd(), prefix, address);
  INFO(f.status().ToString());
  REQUIRE(f.ok());
  return std::move(f).value();
}

// Waits up to `seconds` for `f` to count `n`; returns whether it did.
bool CountsWithin(const FleetMembers& f, uint32_t n, double seconds) {
  const auto start = Clock::now();
  while (Clock::now() - start < std::chrono::duration<double>(seconds)) {
    if (f.size() == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

TEST_CASE("each tracker's budget share keeps the fleet within the budget", "[fleet]") {
  CHECK(OriginBudgetShare(64, 1) == 64);
  CHECK(OriginBudgetShare(64, 2) == 32);
  CHECK(OriginBudgetShare(64, 3) == 22);
  CHECK(OriginBudgetShare(64, 0) == 64);  // no count yet: alone
  CHECK(OriginBudgetShare(2, 5) == 1);    // never 0
  for (uint32_t budget : {1u, 7u, 64u, 4096u}) {
    for (uint32_t n = 1; n <= 10; ++n) {
      const uint32_t share = OriginBudgetShare(budget, n);
      CHECK(share >= 1);
      // Within the budget, unless the budget is smaller than the fleet.
      if (budget >= n) CHECK(share * n < budget + n);
    }
  }
}

TEST_CASE("a fleet counts its trackers as they join and leave", "[fleet]") {
  const std::string prefix = shoal_test::FreshPrefix("fleet-members");
  FleetMembers alone;
  CHECK(alone.size() == 1);
  CHECK(alone.key().empty());

  auto a = JoinOk(prefix, "127.0.0.1:7400");
  CHECK(a->size() == 1);
  CHECK(a->key().rfind(prefix + "fleet/", 0) == 0);
  auto b = JoinOk(prefix, "127.0.0.1:7410");
  CHECK(b->size() == 2);  // Join counts before it returns
  CHECK(b->key() != a->key());
  CHECK(CountsWithin(*a, 2, 3));

  // Each key names its tracker's address.
  auto etcd = shoal_test::OpenTestEtcd();
  auto value = etcd->Get(b->key());
  REQUIRE(value.ok());
  REQUIRE(value->has_value());
  CHECK((*value)->value == "127.0.0.1:7410");

  // A tracker that stops revokes its lease: the other counts one fewer at
  // its next refresh, not a TTL later.
  b.reset();
  CHECK(CountsWithin(*a, 1, 2.5));
}

TEST_CASE("a tracker whose lease etcd forgot joins again", "[fleet]") {
  const std::string prefix = shoal_test::FreshPrefix("fleet-lease");
  auto a = JoinOk(prefix, "127.0.0.1:7400");
  auto b = JoinOk(prefix, "127.0.0.1:7410");
  auto etcd = shoal_test::OpenTestEtcd();
  auto kv = etcd->Get(a->key());
  REQUIRE(kv.ok());
  REQUIRE(kv->has_value());
  REQUIRE((*kv)->lease != 0);
  // As if a's refreshes had stalled past the TTL.
  REQUIRE(etcd->Revoke((*kv)->lease).ok());
  REQUIRE(!etcd->Get(a->key())->has_value());

  const auto start = Clock::now();
  bool back = false;
  while (!back && Clock::now() - start < std::chrono::seconds(4)) {
    auto again = etcd->Get(a->key());
    back = again.ok() && again->has_value() && (*again)->lease != (*kv)->lease;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  CHECK(back);
  CHECK(CountsWithin(*b, 2, 3));
}
