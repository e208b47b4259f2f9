#include "registry/manifest_archive.h"

#include <kj/exception.h>

#include "common/capnp_bytes.h"
#include "proto/record_codec.h"
#include "registry/record_fill.h"
#include "shoal/manifest_codec.h"
#include "shoal/proto/manifest.capnp.h"

namespace shoal::tracker {
namespace {

constexpr char kPrefix[] = "manifests/";
// Bigger than any manifest the registry accepts, so a runaway object is
// refused instead of read into memory.
constexpr size_t kMaxObjectBytes = 256u << 20;

class BoundedSink final : public ByteSink {
 public:
  explicit BoundedSink(const std::string& key) : key_(key) {}
  Status Write(const uint8_t* data, size_t len) override {
    if (out_.size() + len > kMaxObjectBytes) {
      return Status::Corruption("archived manifest " + key_ + " is larger than " +
                                std::to_string(kMaxObjectBytes) + " bytes");
    }
    out_.append(reinterpret_cast<const char*>(data), len);
    return Status::OK();
  }
  std::string& str() { return out_; }

 private:
  const std::string& key_;
  std::string out_;
};

// The version in an archived object's bytes, checked against `id`.
Result<StoredVersion> Decode(const std::string& key, const VersionId& id,
                             const std::string& bytes) {
  StoredVersion v;
  v.id = id;
  try {
    BytesReader br(bytes);
    auto r = br.root<proto::SignedManifest>();
    auto m = r.getManifest();
    v.manifest_bytes.assign(reinterpret_cast<const char*>(m.begin()), m.size());
    auto sig = r.getSignature();
    v.signature.assign(reinterpret_cast<const char*>(sig.begin()), sig.size());
    v.signer_key_id = r.getSignerKeyId().cStr();
    v.upstream = ReadUpstream(r);
  } catch (const kj::Exception& e) {
    return Status::Corruption("archived manifest " + key +
                              " does not parse: " + e.getDescription().cStr());
  }
  if (ComputeVersionId(v.manifest_bytes) != id) {
    return Status::Corruption("archived manifest " + key + " is not version " + id.ToHex());
  }
  return v;
}

}  // namespace

std::string ManifestArchive::KeyOf(const std::string& ns, const std::string& name,
                                   const VersionId& id) {
  return kPrefix + ns + "/" + name + "/" + id.ToHex();
}

Status ManifestArchive::Put(const std::string& ns, const std::string& name,
                            const StoredVersion& v) {
  const std::string key = KeyOf(ns, name, v.id);
  std::string bytes = RecordBytes<proto::SignedManifest>(v, FillSigned);
  SHOAL_RETURN_IF_ERROR(
      origin_.Put(key, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())
          .WithContext("archive manifest " + key));
  Remember(key, v);
  return Status::OK();
}

Result<StoredVersion> ManifestArchive::Get(const std::string& ns, const std::string& name,
                                           const VersionId& id) {
  const std::string key = KeyOf(ns, name, id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  BoundedSink sink(key);
  Status s = origin_.Get(key, 0, Origin::kToEnd, sink);
  if (s.IsNotFound()) {
    return Status::NotFound("the origin " + origin_.Describe() + " has no copy of manifest " + key);
  }
  SHOAL_RETURN_IF_ERROR(s.WithContext("read archived manifest " + key));
  Result<StoredVersion> v = Decode(key, id, sink.str());
  if (v.ok()) Remember(key, *v);
  return v;
}

Status ManifestArchive::Delete(const std::string& ns, const std::string& name,
                               const VersionId& id) {
  const std::string key = KeyOf(ns, name, id);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      lru_.erase(it->second);
      index_.erase(it);
    }
  }
  return origin_.Delete(key).WithContext("delete archived manifest " + key);
}

Status ManifestArchive::ForEach(
    const std::function<Status(const std::string&, const std::string&, const StoredVersion&)>& fn) {
  std::string token;
  do {
    Result<ListPage> page = origin_.List(kPrefix, token, 1000);
    if (!page.ok()) return page.status().WithContext("list archived manifests");
    for (const ObjectInfo& o : page->objects) {
      // manifests/<ns>/<name>/<hex>
      std::string rest = o.key.substr(sizeof(kPrefix) - 1);
      size_t a = rest.find('/'), b = rest.rfind('/');
      auto id = b == std::string::npos ? Result<VersionId>(Status::InvalidArgument(""))
                                       : VersionId::ParseHex(rest.substr(b + 1));
      if (a == std::string::npos || a == b || !id.ok()) {
        return Status::Corruption("unexpected object " + o.key + " among archived manifests");
      }
      Result<StoredVersion> v = Get(rest.substr(0, a), rest.substr(a + 1, b - a - 1), *id);
      if (!v.ok()) return v.status();
      SHOAL_RETURN_IF_ERROR(fn(rest.substr(0, a), rest.substr(a + 1, b - a - 1), *v));
    }
    token = page->next_token;
  } while (!token.empty());
  return Status::OK();
}

void ManifestArchive::Remember(const std::string& key, const StoredVersion& v) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = index_.find(key);
  if (it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.emplace_front(key, v);
  index_[key] = lru_.begin();
  while (lru_.size() > cache_entries_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
}

}  // namespace shoal::tracker
