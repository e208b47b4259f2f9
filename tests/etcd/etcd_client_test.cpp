// EtcdClient against the real three-member cluster of etcd_cluster.sh: keys,
// ranges, transactions and leases as a registry store would use them.
#include "kv/etcd_client.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "etcd/etcd_test_env.h"

using shoal::Status;
using shoal::tracker::Compare;
using shoal::tracker::EtcdClient;
using shoal::tracker::KeyValue;
using shoal::tracker::RangeRequest;
using shoal::tracker::TxnOp;
using shoal_test::FreshPrefix;
using shoal_test::OpenTestEtcd;

namespace {

std::string ValueOf(EtcdClient& etcd, const std::string& key) {
  auto got = etcd.Get(key);
  INFO(got.status().ToString());
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  return (*got)->value;
}

bool Exists(EtcdClient& etcd, const std::string& key) {
  auto got = etcd.Get(key);
  INFO(got.status().ToString());
  REQUIRE(got.ok());
  return got->has_value();
}

// Waits up to `secs` seconds for `key` to disappear; true if it did.
bool GoneWithin(EtcdClient& etcd, const std::string& key, int secs) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(secs);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!Exists(etcd, key)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace

TEST_CASE("etcd client puts, gets and deletes a key with its revisions", "[etcd]") {
  auto etcd = OpenTestEtcd();
  const std::string key = FreshPrefix("put") + "k";

  auto missing = etcd->Get(key);
  REQUIRE(missing.ok());
  CHECK(!missing->has_value());

  auto rev1 = etcd->Put(key, "one");
  INFO(rev1.status().ToString());
  REQUIRE(rev1.ok());
  auto got = etcd->Get(key);
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  const KeyValue& kv = **got;
  CHECK(kv.key == key);
  CHECK(kv.value == "one");
  CHECK(kv.create_revision == *rev1);
  CHECK(kv.mod_revision == *rev1);
  CHECK(kv.version == 1);
  CHECK(kv.lease == 0);

  auto rev2 = etcd->Put(key, "two");
  REQUIRE(rev2.ok());
  CHECK(*rev2 > *rev1);
  auto again = etcd->Get(key);
  REQUIRE(again.ok());
  CHECK((*again)->value == "two");
  CHECK((*again)->version == 2);
  CHECK((*again)->create_revision == *rev1);
  CHECK((*again)->mod_revision == *rev2);

  auto deleted = etcd->Delete(key);
  REQUIRE(deleted.ok());
  CHECK(*deleted == 1);
  CHECK(!Exists(*etcd, key));
  auto none = etcd->Delete(key);
  REQUIRE(none.ok());
  CHECK(*none == 0);
  CHECK(etcd->Ping().ok());
}

TEST_CASE("etcd client keeps every byte value in keys and values", "[etcd]") {
  auto etcd = OpenTestEtcd();
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  const std::string key = FreshPrefix("bytes") + all;
  const std::string value = all + all + std::string("\0\xff\0", 3);

  REQUIRE(etcd->Put(key, value).ok());
  CHECK(ValueOf(*etcd, key) == value);
  REQUIRE(etcd->Put(key, "").ok());
  CHECK(ValueOf(*etcd, key).empty());
}

TEST_CASE("etcd client lists 1000 keys of a prefix in pages from one snapshot", "[etcd]") {
  auto etcd = OpenTestEtcd();
  const std::string base = FreshPrefix("list");
  const std::string prefix = base + "in/";
  // A Txn takes at most 128 operations (etcd's --max-txn-ops).
  for (int batch = 0; batch < 10; ++batch) {
    std::vector<TxnOp> puts;
    for (int i = batch * 100; i < (batch + 1) * 100; ++i) {
      char name[16];
      snprintf(name, sizeof name, "%04d", i);
      puts.push_back(TxnOp::Put(prefix + name, std::to_string(i)));
    }
    auto t = etcd->Txn({}, puts);
    INFO(t.status().ToString());
    REQUIRE(t.ok());
  }
  REQUIRE(etcd->Put(base + "in", "beside the prefix").ok());
  REQUIRE(etcd->Put(base + "io/0000", "after the prefix").ok());

  RangeRequest page = RangeRequest::Prefix(prefix);
  page.limit = 10;
  auto first = etcd->Range(page);
  REQUIRE(first.ok());
  CHECK(first->kvs.size() == 10);
  CHECK(first->more);
  CHECK(first->count == 1000);

  std::vector<std::string> seen;
  Status listed = etcd->ListPrefix(prefix, 64, [&](const KeyValue& kv) {
    // A key written during the listing lies after its snapshot.
    if (seen.empty()) (void)etcd->Put(prefix + "9999-late", "late");
    CHECK(kv.value == std::to_string(std::stoi(kv.key.substr(prefix.size()))));
    seen.push_back(kv.key);
    return Status::OK();
  });
  INFO(listed.ToString());
  REQUIRE(listed.ok());
  REQUIRE(seen.size() == 1000);
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(seen.front() == prefix + "0000");
  CHECK(seen.back() == prefix + "0999");
  CHECK(Exists(*etcd, prefix + "9999-late"));

  // The callback's error stops the listing.
  int calls = 0;
  Status stopped = etcd->ListPrefix(prefix, 64, [&](const KeyValue&) {
    ++calls;
    return Status::IOError("stop here");
  });
  CHECK(stopped.message() == "stop here");
  CHECK(calls == 1);
}

TEST_CASE("etcd txn creates a key only while it is absent", "[etcd]") {
  auto etcd = OpenTestEtcd();
  const std::string key = FreshPrefix("create") + "tag";

  auto made = etcd->Txn({Compare::Absent(key)}, {TxnOp::Put(key, "first")}, {TxnOp::Get(key)});
  INFO(made.status().ToString());
  REQUIRE(made.ok());
  CHECK(made->succeeded);
  REQUIRE(made->results.size() == 1);
  CHECK(made->results[0].kind == TxnOp::Kind::kPut);

  auto lost = etcd->Txn({Compare::Absent(key)}, {TxnOp::Put(key, "second")}, {TxnOp::Get(key)});
  REQUIRE(lost.ok());
  CHECK(!lost->succeeded);
  REQUIRE(lost->results.size() == 1);
  REQUIRE(lost->results[0].kind == TxnOp::Kind::kRange);
  REQUIRE(lost->results[0].range.kvs.size() == 1);
  CHECK(lost->results[0].range.kvs[0].value == "first");
  CHECK(ValueOf(*etcd, key) == "first");

  // Compare-and-swap on the revision read.
  auto kv = etcd->Get(key);
  REQUIRE(kv.ok());
  const int64_t rev = (*kv)->mod_revision;
  auto swapped = etcd->Txn({Compare::ModRevisionIs(key, rev)}, {TxnOp::Put(key, "swapped")});
  REQUIRE(swapped.ok());
  CHECK(swapped->succeeded);
  auto stale = etcd->Txn({Compare::ModRevisionIs(key, rev)}, {TxnOp::Put(key, "stale")});
  REQUIRE(stale.ok());
  CHECK(!stale->succeeded);
  CHECK(ValueOf(*etcd, key) == "swapped");
  auto by_value = etcd->Txn({Compare::ValueIs(key, "swapped")}, {TxnOp::Delete(key)});
  REQUIRE(by_value.ok());
  CHECK(by_value->succeeded);
  REQUIRE(by_value->results.size() == 1);
  CHECK(by_value->results[0].deleted == 1);
  CHECK(!Exists(*etcd, key));
}

TEST_CASE("etcd txn writes several keys at one revision, or none", "[etcd]") {
  auto etcd = OpenTestEtcd();
  const std::string p = FreshPrefix("atomic");

  auto t =
      etcd->Txn({}, {TxnOp::Put(p + "a", "1"), TxnOp::Put(p + "b", "2"), TxnOp::Put(p + "c", "3")});
  REQUIRE(t.ok());
  CHECK(t->succeeded);
  for (const char* k : {"a", "b", "c"}) {
    auto kv = etcd->Get(p + k);
    REQUIRE(kv.ok());
    REQUIRE(kv->has_value());
    CHECK((*kv)->mod_revision == t->revision);
  }

  auto guarded = etcd->Txn({Compare::Absent(p + "b")},
                           {TxnOp::Put(p + "a", "changed"), TxnOp::Put(p + "d", "4")});
  REQUIRE(guarded.ok());
  CHECK(!guarded->succeeded);
  CHECK(ValueOf(*etcd, p + "a") == "1");
  CHECK(!Exists(*etcd, p + "d"));

  auto wiped = etcd->Txn({}, {TxnOp::DeletePrefix(p)});
  REQUIRE(wiped.ok());
  REQUIRE(wiped->results.size() == 1);
  CHECK(wiped->results[0].deleted == 3);
}

TEST_CASE("etcd lease that expires removes its key", "[etcd]") {
  auto etcd = OpenTestEtcd();
  const std::string key = FreshPrefix("lease") + "holder";
  auto lease = etcd->GrantLease(1);
  INFO(lease.status().ToString());
  REQUIRE(lease.ok());
  REQUIRE(etcd->Put(key, "mine", *lease).ok());
  auto kv = etcd->Get(key);
  REQUIRE(kv.ok());
  REQUIRE(kv->has_value());
  CHECK((*kv)->lease == *lease);

  CHECK(GoneWithin(*etcd, key, 5));
  auto dead = etcd->KeepAlive(*lease);
  CHECK(dead.status().IsNotFound());
  // A put on an expired lease is refused, with etcd's reason.
  auto refused = etcd->Put(key, "late", *lease);
  CHECK(refused.status().IsNotFound());
  CHECK(refused.status().message().find("lease not found") != std::string::npos);
}

TEST_CASE("etcd keepalive keeps a leased key past its TTL, and revoke removes it", "[etcd]") {
  auto etcd = OpenTestEtcd();
  const std::string p = FreshPrefix("keepalive");
  auto lease = etcd->GrantLease(2);
  REQUIRE(lease.ok());
  REQUIRE(etcd->Put(p + "kept", "alive", *lease).ok());

  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < until) {
    auto ttl = etcd->KeepAlive(*lease);
    INFO(ttl.status().ToString());
    REQUIRE(ttl.ok());
    CHECK(*ttl >= 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  CHECK(Exists(*etcd, p + "kept"));

  REQUIRE(etcd->Revoke(*lease).ok());
  CHECK(!Exists(*etcd, p + "kept"));
  CHECK(etcd->Revoke(*lease).IsNotFound());
}

TEST_CASE("etcd client serves many threads at once", "[etcd]") {
  auto etcd = OpenTestEtcd();
  const std::string p = FreshPrefix("threads");
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        std::string key = p + std::to_string(t) + "/" + std::to_string(i);
        if (!etcd->Put(key, key).ok()) ++failures;
        auto got = etcd->Get(key);
        if (!got.ok() || !got->has_value() || (*got)->value != key) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(failures == 0);
  auto count = RangeRequest::Prefix(p);
  count.count_only = true;
  auto r = etcd->Range(count);
  REQUIRE(r.ok());
  CHECK(r->count == 320);
}

TEST_CASE("etcd refuses a value larger than its request limit, in one clear line", "[etcd]") {
  auto etcd = OpenTestEtcd();
  const std::string key = FreshPrefix("big") + "v";
  // Over etcd's 1.5 MiB request limit; and over gRPC's message limit (2 MiB).
  for (size_t size : {size_t{1600} << 10, size_t{3} << 20}) {
    auto put = etcd->Put(key, std::string(size, 'x'));
    REQUIRE(!put.ok());
    INFO(put.status().ToString());
    CHECK(put.status().code() == Status::Code::kInvalidArgument);
    CHECK(put.status().message().find("--max-request-bytes") != std::string::npos);
    CHECK(put.status().message().find("http://127.0.0.1:") != std::string::npos);
    CHECK(put.status().message().find('\n') == std::string::npos);
    CHECK(!Exists(*etcd, key));
  }
  // Just under the limit is fine.
  REQUIRE(etcd->Put(key, std::string(1400 << 10, 'y')).ok());
  CHECK(ValueOf(*etcd, key).size() == 1400 << 10);

  auto empty = etcd->Put("", "v");
  CHECK(empty.status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("etcd client options name what is wrong with them", "[etcd]") {
  shoal::tracker::EtcdOptions o;
  auto none = EtcdClient::Open(o);
  CHECK(none.status().code() == Status::Code::kInvalidArgument);
  CHECK(none.status().message().find("no endpoints") != std::string::npos);

  o.endpoints = {"http://127.0.0.1:2379", "etcd-1:2379"};
  auto scheme = EtcdClient::Open(o);
  CHECK(scheme.status().code() == Status::Code::kInvalidArgument);
  CHECK(scheme.status().message().find("etcd-1:2379") != std::string::npos);

  o.endpoints = {"http://127.0.0.1:2379"};
  o.timeout_ms = 0;
  CHECK(EtcdClient::Open(o).status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("etcd prefix listing handles prefixes that end in 0xff bytes", "[etcd]") {
  using shoal::tracker::PrefixRangeEnd;
  CHECK(PrefixRangeEnd("a\xff") == "b");
  CHECK(PrefixRangeEnd("ab") == "ac");
  CHECK(PrefixRangeEnd("\xff\xff") == std::string(1, '\0'));  // no end: every key after

  auto etcd = OpenTestEtcd();
  const std::string base = FreshPrefix("ff");
  const std::string prefix = base + "\xff";
  for (const std::string& k : {prefix, prefix + std::string(1, '\0'), prefix + "\xff" + "z"}) {
    REQUIRE(etcd->Put(k, "in").ok());
  }
  REQUIRE(etcd->Put(base + "\xfe", "out").ok());
  std::vector<std::string> seen;
  REQUIRE(etcd->ListPrefix(prefix, 2,
                           [&](const KeyValue& kv) {
                             seen.push_back(kv.key);
                             return Status::OK();
                           })
              .ok());
  CHECK(seen ==
        std::vector<std::string>{prefix, prefix + std::string(1, '\0'), prefix + "\xff" + "z"});
}
