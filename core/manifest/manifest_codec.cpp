// Manifest <-> canonical Cap'n Proto bytes. The only place that knows the
// generated manifest types, besides the JSON view.
#include "shoal/manifest_codec.h"

#include <capnp/message.h>
#include <kj/exception.h>

#include <cstring>

#include "shoal/proto/manifest.capnp.h"
#include "shoal/sha256.h"

namespace shoal {
namespace {

template <typename Tag>
kj::ArrayPtr<const kj::byte> HashBytes(const Hash256<Tag>& h) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(h.data()), Hash256<Tag>::kSize);
}

void Fill(const Manifest& m, proto::Manifest::Builder out) {
  out.setFormatVersion(kManifestFormatVersion);
  out.setNamespace(m.ns);
  out.setName(m.name);
  out.setCreatedBy(m.created_by);
  out.setCreatedAtMs(m.created_at_ms);
  if (m.parent) out.setParentVersion(HashBytes(*m.parent));
  auto labels = out.initLabels(static_cast<unsigned>(m.labels.size()));
  for (size_t i = 0; i < m.labels.size(); ++i) {
    labels[static_cast<unsigned>(i)].setKey(m.labels[i].key);
    labels[static_cast<unsigned>(i)].setValue(m.labels[i].value);
  }
  out.setPieceSize(m.piece_size);
  auto files = out.initFiles(static_cast<unsigned>(m.files.size()));
  for (size_t i = 0; i < m.files.size(); ++i) {
    const FileEntry& f = m.files[i];
    auto fb = files[static_cast<unsigned>(i)];
    fb.setPath(f.path);
    fb.setSize(f.size);
    fb.setMode(f.mode);
    if (f.size > 0) fb.setPiecesRoot(HashBytes(f.pieces_root));
    if (!f.piece_layer.empty()) {
      auto layer = fb.initPieceLayer(static_cast<unsigned>(f.piece_layer.size() * ChunkId::kSize));
      for (size_t p = 0; p < f.piece_layer.size(); ++p) {
        std::memcpy(layer.begin() + p * ChunkId::kSize, f.piece_layer[p].data(), ChunkId::kSize);
      }
    }
    if (f.sha256) fb.setSha256(HashBytes(*f.sha256));
    if (!f.source_etag.empty()) fb.setSourceEtag(f.source_etag);
  }
  if (!m.source.empty()) {
    auto src = out.initSource();
    src.setUrl(m.source.url);
    src.setRevision(m.source.revision);
    src.setCommit(m.source.commit);
  }
  auto dirs = out.initEmptyDirs(static_cast<unsigned>(m.empty_dirs.size()));
  for (size_t i = 0; i < m.empty_dirs.size(); ++i)
    dirs.set(static_cast<unsigned>(i), m.empty_dirs[i]);
}

std::string Str(capnp::Text::Reader t) { return std::string(t.begin(), t.size()); }

// Converts a reader into the domain type, checking every count and length
// against ManifestLimits before allocating for it.
Result<Manifest> Extract(proto::Manifest::Reader r) {
  if (r.getFormatVersion() != kManifestFormatVersion) {
    return Status::InvalidArgument("manifest format version " +
                                   std::to_string(r.getFormatVersion()) +
                                   " is not supported; this build reads version 1");
  }
  Manifest m;
  m.ns = Str(r.getNamespace());
  m.name = Str(r.getName());
  m.created_by = Str(r.getCreatedBy());
  m.created_at_ms = r.getCreatedAtMs();
  auto parent = r.getParentVersion();
  if (parent.size() != 0) {
    if (parent.size() != VersionId::kSize) {
      return Status::InvalidArgument("parent version must be 32 bytes, got " +
                                     std::to_string(parent.size()));
    }
    m.parent = VersionId::FromBytes(parent.begin());
  }
  m.piece_size = r.getPieceSize();

  auto labels = r.getLabels();
  if (labels.size() > ManifestLimits::kMaxLabels) {
    return Status::InvalidArgument("manifest has " + std::to_string(labels.size()) +
                                   " labels; the limit is 64");
  }
  for (auto l : labels) m.labels.push_back({Str(l.getKey()), Str(l.getValue())});

  auto files = r.getFiles();
  if (files.size() > ManifestLimits::kMaxFiles) {
    return Status::InvalidArgument("manifest has " + std::to_string(files.size()) +
                                   " files; the limit is 200000");
  }
  m.files.reserve(files.size());
  uint64_t total_pieces = 0;
  for (auto fr : files) {
    FileEntry f;
    f.path = Str(fr.getPath());
    f.size = fr.getSize();
    f.mode = fr.getMode();
    auto root = fr.getPiecesRoot();
    if (root.size() != 0 && root.size() != PiecesRoot::kSize) {
      return Status::InvalidArgument("file '" + f.path.substr(0, 120) + "' has a pieces root of " +
                                     std::to_string(root.size()) + " bytes; it must be 32");
    }
    if (root.size() == PiecesRoot::kSize) f.pieces_root = PiecesRoot::FromBytes(root.begin());
    auto layer = fr.getPieceLayer();
    if (layer.size() % ChunkId::kSize != 0) {
      return Status::InvalidArgument("file '" + f.path.substr(0, 120) +
                                     "' has a piece layer that is not a whole number of hashes");
    }
    size_t count = layer.size() / ChunkId::kSize;
    total_pieces += count;
    if (total_pieces > ManifestLimits::kMaxTotalPieces) {
      return Status::InvalidArgument("manifest has more than " +
                                     std::to_string(ManifestLimits::kMaxTotalPieces) +
                                     " piece hashes; use a larger piece size");
    }
    f.piece_layer.reserve(count);
    for (size_t p = 0; p < count; ++p) {
      f.piece_layer.push_back(ChunkId::FromBytes(layer.begin() + p * ChunkId::kSize));
    }
    auto sha = fr.getSha256();
    if (sha.size() != 0 && sha.size() != Digest::kSize) {
      return Status::InvalidArgument("file '" + f.path.substr(0, 120) + "' has a SHA-256 of " +
                                     std::to_string(sha.size()) + " bytes; it must be 32");
    }
    if (sha.size() == Digest::kSize) f.sha256 = Digest::FromBytes(sha.begin());
    f.source_etag = Str(fr.getSourceEtag());
    m.files.push_back(std::move(f));
  }
  if (r.hasSource()) {
    auto src = r.getSource();
    m.source = {Str(src.getUrl()), Str(src.getRevision()), Str(src.getCommit())};
  }
  auto dirs = r.getEmptyDirs();
  if (dirs.size() > ManifestLimits::kMaxEmptyDirs) {
    return Status::InvalidArgument("manifest has more than 100000 empty folders");
  }
  for (auto d : dirs) m.empty_dirs.push_back(Str(d));
  return m;
}

template <typename T, typename Less>
bool StrictlySorted(const std::vector<T>& v, Less less) {
  for (size_t i = 1; i < v.size(); ++i) {
    if (!less(v[i - 1], v[i])) return false;
  }
  return true;
}

}  // namespace

VersionId ComputeVersionId(std::string_view canonical_bytes) {
  return VersionId::From(Sha256::Of(canonical_bytes.data(), canonical_bytes.size()));
}

namespace {

// The canonical bytes of `m`, in canonical order; `m` need not be valid.
std::string CanonicalBytes(Manifest m) {
  m.Canonicalize();
  capnp::MallocMessageBuilder builder;
  Fill(m, builder.initRoot<proto::Manifest>());
  kj::Array<capnp::word> words = capnp::canonicalize(builder.getRoot<proto::Manifest>().asReader());
  return std::string(reinterpret_cast<const char*>(words.asBytes().begin()),
                     words.asBytes().size());
}

}  // namespace

Result<std::string> EncodeManifest(const Manifest& input) {
  SHOAL_RETURN_IF_ERROR(ValidateManifest(input));
  std::string bytes = CanonicalBytes(input);
  if (bytes.size() > ManifestLimits::kMaxEncodedBytes) {
    return Status::InvalidArgument("manifest encodes to more than 64 MiB; use a larger piece size");
  }
  return bytes;
}

Result<Manifest> DecodeManifest(std::string_view bytes) {
  if (bytes.size() > ManifestLimits::kMaxEncodedBytes) {
    return Status::InvalidArgument("manifest is " + std::to_string(bytes.size()) +
                                   " bytes; the limit is 64 MiB");
  }
  if (bytes.empty() || bytes.size() % sizeof(capnp::word) != 0) {
    return Status::Corruption("manifest is " + std::to_string(bytes.size()) +
                              " bytes, not a whole number of 8-byte words");
  }
  // Copy into word-aligned memory; the input may come from any buffer.
  auto words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  kj::ArrayPtr<const capnp::word> segments[1] = {words.asPtr()};

  capnp::ReaderOptions options;
  // The canonical check walks the message once and decoding once more; a
  // limit of a few times its size allows that and leaves no room for
  // amplification through shared pointers.
  options.traversalLimitInWords = words.size() * 4 + 64;
  options.nestingLimit = 16;

  Result<Manifest> result = Status::Corruption("manifest could not be read");
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                 capnp::SegmentArrayMessageReader reader(kj::arrayPtr(segments, 1), options);
                 if (!reader.isCanonical()) {
                   result = Status::Corruption("manifest bytes are not in canonical form");
                   return;
                 }
                 result = Extract(reader.getRoot<proto::Manifest>());
               })) {
    return Status::Corruption("manifest is malformed: " +
                              std::string(e->getDescription().cStr()).substr(0, 200));
  }
  if (!result.ok()) return result;
  Manifest& m = result.value();
  SHOAL_RETURN_IF_ERROR(ValidateManifest(m));
  auto by_path = [](const FileEntry& a, const FileEntry& b) { return a.path < b.path; };
  auto by_key = [](const Label& a, const Label& b) { return a.key < b.key; };
  if (!StrictlySorted(m.files, by_path) || !StrictlySorted(m.labels, by_key) ||
      !StrictlySorted(m.empty_dirs, std::less<std::string>())) {
    return Status::Corruption("manifest lists are not in canonical (sorted) order");
  }
  // isCanonical() does not look at the bits of a struct's data section that
  // no field uses: bytes with any of them set would decode to this manifest
  // under another version ID.
  if (CanonicalBytes(m) != bytes) {
    return Status::Corruption("manifest bytes are not in canonical form");
  }
  return result;
}

}  // namespace shoal
