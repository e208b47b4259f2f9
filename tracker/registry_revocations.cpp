// RegistryStore's token revocations: R|<seq> keys (registry_store.h).
#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include "capnp_bytes.h"
#include "record_codec.h"
#include "registry_layout.h"
#include "registry_store.h"
#include "shoal/proto/tracker.capnp.h"

namespace shoal::tracker {

Status RegistryStore::AddRevocation(Revocation* r, const AuditEntry& audit) {
  SHOAL_RETURN_IF_ERROR(r->Validate());
  std::lock_guard<std::mutex> lock(mu_);
  r->seq = next_revocation_seq_;
  leveldb::WriteBatch batch;
  batch.Put("R|" + Seq(r->seq), RecordBytes<proto::Revocation>(*r, FillRevocation));
  PutAudit(&batch, audit);
  SHOAL_RETURN_IF_ERROR(FromLevelDb(db_->Write(Synced(), &batch), "write revocation"));
  next_revocation_seq_++;
  return Status::OK();
}

Result<std::vector<Revocation>> RegistryStore::Revocations() {
  std::vector<Revocation> out;
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
  for (it->Seek("R|"); it->Valid() && StartsWith(it->key(), "R|"); it->Next()) {
    BytesReader br(std::string_view(it->value().data(), it->value().size()));
    Result<Revocation> r = ReadRevocation(br.root<proto::Revocation>());
    if (!r.ok()) {
      return Status::Corruption("registry record " + it->key().ToString() + ": " +
                                r.status().message());
    }
    out.push_back(std::move(r).value());
  }
  return out;
}

}  // namespace shoal::tracker
