// RegistryStore's token revocations: R|<seq> keys (registry_store.h).
#include <kj/exception.h>

#include "capnp_bytes.h"
#include "record_codec.h"
#include "registry_layout.h"
#include "registry_store.h"
#include "shoal/proto/tracker.capnp.h"

namespace shoal::tracker {

Status RegistryStore::AddRevocation(Revocation* r, const AuditEntry& audit) {
  SHOAL_RETURN_IF_ERROR(r->Validate());
  return Write("write revocation", [&](KvBatch* batch) {
    Result<uint64_t> seq = NextSeq("R|", batch);
    if (!seq.ok()) return seq.status();
    r->seq = *seq;
    batch->Put("R|" + Seq(r->seq), RecordBytes<proto::Revocation>(*r, FillRevocation));
    return PutAudit(batch, audit);
  });
}

Result<std::vector<Revocation>> RegistryStore::Revocations(uint64_t after_seq) {
  std::vector<Revocation> out;
  Status failed;
  Status s = VisitRange(kv_, "R|" + Seq(after_seq + 1), PrefixEnd("R|"), [&](const KvPair& p) {
    Result<Revocation> r = Status::Corruption("unreadable");
    try {
      BytesReader br(p.value);
      r = ReadRevocation(br.root<proto::Revocation>());
    } catch (const kj::Exception& e) {
      r = Status::Corruption(e.getDescription().cStr());
    }
    if (!r.ok()) {
      failed = Status::Corruption("registry record " + p.key + ": " + r.status().message());
      return false;
    }
    out.push_back(std::move(r).value());
    return true;
  });
  if (!s.ok()) return s;
  if (!failed.ok()) return failed;
  return out;
}

}  // namespace shoal::tracker
