#include "storage/registry_open.h"

#include "kv/etcd_kv.h"
#include "kv/leveldb_kv.h"

namespace shoal::tracker {

Result<std::unique_ptr<KvStore>> OpenRegistryKv(const TrackerOptions& o) {
  auto where = RegistryLocation::Parse(o.registry);
  if (!where.ok()) return where.status();
  if (!where->etcd) {
    auto kv = LevelDbKv::Open(o.data_dir + "/registry");
    if (!kv.ok()) return kv.status();
    return std::unique_ptr<KvStore>(std::move(kv).value());
  }
  where->etcd_options.ca_file = o.registry_ca_file;
  auto kv = EtcdKv::Open(where->etcd_options, where->key_prefix);
  if (!kv.ok()) return kv.status();
  // Fail now, in one line, rather than on the first request.
  SHOAL_RETURN_IF_ERROR((*kv)->Ping().WithContext("registry " + (*kv)->Describe()));
  return std::unique_ptr<KvStore>(std::move(kv).value());
}

}  // namespace shoal::tracker
