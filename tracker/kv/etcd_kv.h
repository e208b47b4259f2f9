// EtcdKv: KvStore on an etcd cluster, the registry engine a fleet of
// trackers shares (etcd_client.h speaks to it).
//
// Every key is stored under `key_prefix` (so several Shoal clusters can
// share one etcd), and each KvBatch is one etcd transaction: the guards
// become its compares, the ops its success branch. A batch whose answer
// was lost (etcd's leader died with it in flight) is settled by reading
// back: if its guards still hold it never applied and is sent again; if
// its puts and deletes are all in place it applied; otherwise another
// writer got there first (AlreadyExists, and the registry rebuilds it).
//
// Limits: at most 128 ops and 128 guards a batch (etcd's --max-txn-ops),
// and values over 512 KiB are better kept elsewhere (etcd refuses
// requests over 1.5 MiB); the registry keeps such manifests only in the
// origin's archive.
//
// Thread-safety: safe for concurrent use.
#ifndef SHOAL_TRACKER_ETCD_KV_H_
#define SHOAL_TRACKER_ETCD_KV_H_

#include <memory>
#include <string>

#include "kv/etcd_client.h"
#include "kv/kv_store.h"

namespace shoal::tracker {

// Where a registry lives: "" (LevelDB in the data folder) or
// "etcd://host:port,host:port/prefix" ("etcd+https://" for TLS).
struct RegistryLocation {
  bool etcd = false;
  EtcdOptions etcd_options;  // endpoints as http(s)://host:port
  std::string key_prefix;    // "shoal/" when the URL names none

  // InvalidArgument naming what is wrong with `url`.
  static Result<RegistryLocation> Parse(const std::string& url);
};

class EtcdKv final : public KvStore {
 public:
  // Connects lazily: an unreachable cluster fails the first call, not this.
  static Result<std::unique_ptr<EtcdKv>> Open(const EtcdOptions& options,
                                              const std::string& key_prefix);

  Result<std::optional<std::string>> Get(const std::string& key) override;
  Result<std::vector<KvPair>> Scan(const std::string& begin, const std::string& end, size_t limit,
                                   bool reverse) override;
  Status Apply(const KvBatch& batch) override;
  size_t max_batch_ops() const override { return 128; }
  size_t max_value_bytes() const override { return 512 * 1024; }
  Status Ping() override { return client_->Ping(); }
  std::string Describe() const override { return describe_; }

 private:
  EtcdKv(std::unique_ptr<EtcdClient> client, std::string prefix, std::string describe)
      : client_(std::move(client)), prefix_(std::move(prefix)), describe_(std::move(describe)) {}
  // Whether the state etcd holds now shows `batch` applied (true), not
  // applied with its guards still holding (false), or neither
  // (AlreadyExists).
  Result<bool> Settle(const KvBatch& batch);

  std::unique_ptr<EtcdClient> client_;
  const std::string prefix_;
  const std::string describe_;
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_ETCD_KV_H_
