#include "kv/etcd_kv.h"

namespace shoal::tracker {
namespace {

// The end of a range over prefixed keys: "" (no bound) becomes the end of
// the prefix itself.
std::string RangeEnd(const std::string& prefix, const std::string& end) {
  return end.empty() ? PrefixRangeEnd(prefix) : prefix + end;
}

bool IsOutcomeUnknown(const Status& s) {
  return s.IsUnavailable() && s.message().find("outcome unknown") != std::string::npos;
}

}  // namespace

Result<RegistryLocation> RegistryLocation::Parse(const std::string& url) {
  RegistryLocation loc;
  if (url.empty() || url == "leveldb") return loc;
  std::string scheme, rest;
  if (url.rfind("etcd://", 0) == 0) {
    scheme = "http://";
    rest = url.substr(7);
  } else if (url.rfind("etcd+https://", 0) == 0) {
    scheme = "https://";
    rest = url.substr(13);
  } else {
    return Status::InvalidArgument("--registry '" + url +
                                   "': expected etcd://host:port[,host:port...][/prefix] "
                                   "(or etcd+https://), or leave it out for LevelDB");
  }
  loc.etcd = true;
  size_t slash = rest.find('/');
  std::string hosts = rest.substr(0, slash);
  loc.key_prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (loc.key_prefix.empty()) loc.key_prefix = "shoal";
  if (loc.key_prefix.back() != '/') loc.key_prefix += '/';
  size_t start = 0;
  while (start <= hosts.size()) {
    size_t comma = hosts.find(',', start);
    std::string host =
        hosts.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (host.empty() || host.find(':') == std::string::npos) {
      return Status::InvalidArgument("--registry '" + url + "': '" + host + "' is not host:port");
    }
    loc.etcd_options.endpoints.push_back(scheme + host);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return loc;
}

Result<std::unique_ptr<EtcdKv>> EtcdKv::Open(const EtcdOptions& options,
                                             const std::string& key_prefix) {
  auto client = EtcdClient::Open(options);
  if (!client.ok()) return client.status().WithContext("etcd registry");
  std::string describe = "etcd:";
  for (size_t i = 0; i < options.endpoints.size(); ++i) {
    describe += (i ? "," : "") + options.endpoints[i];
  }
  describe += "/" + key_prefix;
  return std::unique_ptr<EtcdKv>(new EtcdKv(std::move(client).value(), key_prefix, describe));
}

Result<std::optional<std::string>> EtcdKv::Get(const std::string& key) {
  auto kv = client_->Get(prefix_ + key);
  if (!kv.ok()) return kv.status().WithContext("registry read");
  if (!kv->has_value()) return std::optional<std::string>();
  return std::optional<std::string>(std::move((*kv)->value));
}

Result<std::vector<KvPair>> EtcdKv::Scan(const std::string& begin, const std::string& end,
                                         size_t limit, bool reverse) {
  RangeRequest r;
  r.key = prefix_ + begin;
  r.range_end = RangeEnd(prefix_, end);
  r.limit = static_cast<int64_t>(limit);
  r.descending = reverse;
  auto got = client_->Range(r);
  if (!got.ok()) return got.status().WithContext("registry scan");
  std::vector<KvPair> out;
  out.reserve(got->kvs.size());
  for (KeyValue& kv : got->kvs) {
    out.push_back({kv.key.substr(prefix_.size()), std::move(kv.value)});
  }
  return out;
}

Status EtcdKv::Apply(const KvBatch& batch) {
  std::vector<Compare> compares;
  for (const KvBatch::Guard& g : batch.guards()) {
    if (!g.value) {
      compares.push_back(Compare::Absent(prefix_ + g.key));
      continue;
    }
    // An absent key reads as an empty value: insist it exists too.
    Compare exists;
    exists.key = prefix_ + g.key;
    exists.target = Compare::Target::kCreateRevision;
    exists.op = Compare::Op::kGreater;
    exists.number = 0;
    compares.push_back(exists);
    compares.push_back(Compare::ValueIs(prefix_ + g.key, *g.value));
  }
  std::vector<TxnOp> ops;
  for (const KvBatch::Op& op : batch.ops()) {
    ops.push_back(op.value ? TxnOp::Put(prefix_ + op.key, *op.value)
                           : TxnOp::Delete(prefix_ + op.key));
  }
  for (int attempt = 0;; ++attempt) {
    Result<TxnResult> r = client_->Txn(compares, ops);
    if (r.ok()) {
      if (r->succeeded) return Status::OK();
      return Status::AlreadyExists("a registry key changed under this write");
    }
    if (!IsOutcomeUnknown(r.status()) || attempt == 2) {
      return r.status().WithContext("registry write");
    }
    // The answer was lost; what etcd holds now says what happened.
    Result<bool> applied = Settle(batch);
    if (!applied.ok()) return applied.status();
    if (*applied) return Status::OK();
  }
}

Result<bool> EtcdKv::Settle(const KvBatch& batch) {
  // Puts and deletes alone land the same however often they are sent.
  if (batch.guards().empty()) return false;
  bool guards_hold = true;
  for (const KvBatch::Guard& g : batch.guards()) {
    auto now = Get(g.key);
    if (!now.ok()) return now.status();
    if (*now != g.value) guards_hold = false;
  }
  if (guards_hold) return false;  // never applied: send it again
  for (const KvBatch::Op& op : batch.ops()) {
    auto now = Get(op.key);
    if (!now.ok()) return now.status();
    if (*now != op.value) {
      return Status::AlreadyExists("a registry key changed while a write's outcome was unknown");
    }
  }
  return true;
}

}  // namespace shoal::tracker
