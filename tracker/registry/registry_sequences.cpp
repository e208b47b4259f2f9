// RegistryStore's numbered sequences: the counters behind them (N| keys),
// the audit log (A|) and the feed of versions committed and deleted (F|).
#include <kj/exception.h>

#include <algorithm>

#include "common/capnp_bytes.h"
#include "registry/record_fill.h"
#include "registry/registry_layout.h"
#include "registry/registry_store.h"
#include "shoal/proto/tracker.capnp.h"

namespace shoal::tracker {
namespace {

std::string EncodeAudit(const AuditEntry& a) {
  return RecordBytes<proto::AuditRecord>(a, FillAuditRecord);
}

AuditEntry DecodeAudit(const std::string& bytes) {
  BytesReader br(bytes);
  auto r = br.root<proto::AuditRecord>();
  return {r.getSeq(),    r.getAtMs(),   r.getSubject(), r.getTokenId(),
          r.getAction(), r.getTarget(), r.getDetail()};
}

}  // namespace

// Each numbered sequence keeps its last number in a counter key, N|<prefix>,
// so the next one costs one read however long the sequence grows. A
// registry written before counters existed has none: the last key under
// the prefix says where it stands, once.
Result<uint64_t> RegistryStore::LastSeq(const std::string& prefix) {
  auto counter = kv_.Get("N|" + prefix);
  if (!counter.ok()) return counter.status();
  if (counter->has_value()) return SeqOfKey(**counter);
  auto last = kv_.Scan(prefix, PrefixEnd(prefix), 1, /*reverse=*/true);
  if (!last.ok()) return last.status();
  return last->empty() ? uint64_t{0} : SeqOfKey(last->front().key);
}

Result<uint64_t> RegistryStore::NextSeq(const std::string& prefix, KvBatch* batch) {
  const std::string counter_key = "N|" + prefix;
  auto counter = kv_.Get(counter_key);
  if (!counter.ok()) return counter.status();
  uint64_t seq = 0;
  if (counter->has_value()) {
    seq = SeqOfKey(**counter) + 1;
    batch->ExpectValue(counter_key, **counter);
  } else {
    Result<uint64_t> last = LastSeq(prefix);
    if (!last.ok()) return last.status();
    seq = *last + 1;
    batch->ExpectAbsent(counter_key);
  }
  batch->Put(counter_key, Seq(seq));
  return seq;
}

Status RegistryStore::PutAudit(KvBatch* batch, const AuditEntry& audit) {
  AuditEntry a = audit;
  Result<uint64_t> seq = NextSeq("A|", batch);
  if (!seq.ok()) return seq.status();
  a.seq = *seq;
  batch->Put("A|" + Seq(a.seq), EncodeAudit(a));
  return Status::OK();
}

// A feed value: "c|ns|name|hex" (committed) or "d|ns|name|hex" (deleted).
Status RegistryStore::PutFeed(KvBatch* batch, bool deleted, const std::string& ns,
                              const std::string& name, const VersionId& id) {
  Result<uint64_t> seq = NextSeq("F|", batch);
  if (!seq.ok()) return seq.status();
  batch->Put("F|" + Seq(*seq),
             std::string(deleted ? "d|" : "c|") + ns + "|" + name + "|" + id.ToHex());
  return Status::OK();
}

Result<std::vector<FeedEntry>> RegistryStore::FeedAfter(uint64_t after_seq, uint32_t limit) {
  auto page = kv_.Scan("F|" + Seq(after_seq + 1), PrefixEnd("F|"), std::max<uint32_t>(limit, 1),
                       /*reverse=*/false);
  if (!page.ok()) return page.status();
  std::vector<FeedEntry> out;
  for (const KvPair& p : *page) {
    const std::string& v = p.value;
    size_t a = v.find('|', 2), b = v.rfind('|');
    auto id = b == std::string::npos ? Result<VersionId>(Status::InvalidArgument("no id"))
                                     : VersionId::ParseHex(v.substr(b + 1));
    if (v.size() < 2 || (v[0] != 'c' && v[0] != 'd') || a == std::string::npos || a >= b ||
        !id.ok()) {
      return Status::Corruption("registry record " + p.key + " is not a feed entry");
    }
    out.push_back(FeedEntry{SeqOfKey(p.key), v[0] == 'd', v.substr(2, a - 2),
                            v.substr(a + 1, b - a - 1), *id});
  }
  return out;
}

Result<uint64_t> RegistryStore::FeedEnd() { return LastSeq("F|"); }

Result<uint64_t> RegistryStore::AuditEnd() { return LastSeq("A|"); }

Status RegistryStore::Audit(const AuditEntry& entry) {
  return Write("write audit log", [&](KvBatch* batch) { return PutAudit(batch, entry); });
}

Result<std::vector<AuditEntry>> RegistryStore::AuditLog(uint64_t after_seq, uint32_t limit) {
  auto page = kv_.Scan("A|" + Seq(after_seq + 1), PrefixEnd("A|"), std::max<uint32_t>(limit, 1),
                       /*reverse=*/false);
  if (!page.ok()) return page.status();
  std::vector<AuditEntry> out;
  for (const KvPair& p : *page) {
    try {
      out.push_back(DecodeAudit(p.value));
    } catch (const kj::Exception& e) {
      return Status::Corruption("registry record " + p.key + ": " + e.getDescription().cStr());
    }
  }
  return out;
}

}  // namespace shoal::tracker
