// Manifest: one immutable checkpoint version, as plain C++ values.
//
// The wire and storage form is Cap'n Proto (proto/manifest.capnp), encoded
// canonically so that the same manifest always has the same bytes and so the
// same VersionId. manifest_codec.h converts; this header has no Cap'n Proto
// types, so it is cheap to include.
#ifndef SHOAL_MANIFEST_H_
#define SHOAL_MANIFEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/pieces_root.h"
#include "shoal/status.h"
#include "shoal/version_id.h"

namespace shoal {

// Documented bounds. A manifest outside them is rejected before anything
// proportional to its claimed sizes is allocated.
struct ManifestLimits {
  static constexpr uint64_t kMaxEncodedBytes = 64ull << 20;  // whole manifest
  static constexpr size_t kMaxFiles = 200000;
  static constexpr size_t kMaxEmptyDirs = 100000;
  static constexpr uint64_t kMaxTotalPieces = 1ull << 21;  // 64 MiB of piece hashes
  static constexpr size_t kMaxPathBytes = 4096;
  static constexpr size_t kMaxPathComponentBytes = 255;
  static constexpr size_t kMaxNameBytes = 128;  // namespace and model name
  static constexpr size_t kMaxCreatorBytes = 256;
  static constexpr size_t kMaxLabels = 64;
  static constexpr size_t kMaxLabelKeyBytes = 128;
  static constexpr size_t kMaxLabelValueBytes = 1024;
  static constexpr uint64_t kMaxFileSize = 1ull << 44;  // 16 TiB
  static constexpr size_t kMaxSourceFieldBytes = 4096;  // each field of a Source
  static constexpr size_t kMaxEtagBytes = 256;          // FileEntry::source_etag
};

constexpr uint16_t kManifestFormatVersion = 1;

struct Label {
  std::string key;
  std::string value;
  friend bool operator==(const Label& a, const Label& b) {
    return a.key == b.key && a.value == b.value;
  }
};

struct FileEntry {
  std::string path;                  // relative, '/'-separated
  uint64_t size = 0;                 // bytes
  uint32_t mode = 0644;              // permission bits
  PiecesRoot pieces_root;            // zero for an empty file
  std::vector<ChunkId> piece_layer;  // empty when size <= piece size
  std::optional<Digest> sha256;      // of the whole file, where recorded (imports)
  std::string source_etag;           // imported files: the source's ETag or hash

  // Number of chunks: 0 for an empty file, else ceil(size / piece_size).
  uint64_t ChunkCount(uint32_t piece_size) const;
  // The chunk IDs in file order (see FileChunkIds in piece_hasher.h).
  std::vector<ChunkId> ChunkIds() const;
  // Bytes in chunk `p`: piece_size, less for the last.
  // REQUIRES: p < ChunkCount(piece_size).
  uint64_t ChunkBytes(uint32_t piece_size, uint64_t p) const {
    return size - p * piece_size < piece_size ? size - p * piece_size : piece_size;
  }

  friend bool operator==(const FileEntry& a, const FileEntry& b) {
    return a.path == b.path && a.size == b.size && a.mode == b.mode &&
           a.pieces_root == b.pieces_root && a.piece_layer == b.piece_layer &&
           a.sha256 == b.sha256 && a.source_etag == b.source_etag;
  }
};

// Where an imported version came from. All empty for a published folder.
struct ManifestSource {
  std::string url;       // as given to `shoal import`
  std::string revision;  // as asked, e.g. a hub revision; may be empty
  std::string commit;    // as resolved, e.g. the hub's commit sha; may be empty
  bool empty() const { return url.empty() && revision.empty() && commit.empty(); }
  friend bool operator==(const ManifestSource& a, const ManifestSource& b) {
    return a.url == b.url && a.revision == b.revision && a.commit == b.commit;
  }
};

struct Manifest {
  std::string ns;    // namespace (team)
  std::string name;  // model name
  std::string created_by;
  int64_t created_at_ms = 0;  // Unix epoch, milliseconds
  std::optional<VersionId> parent;
  std::vector<Label> labels;        // unique keys
  uint32_t piece_size = 16u << 20;  // bytes
  std::vector<FileEntry> files;     // unique paths
  std::vector<std::string> empty_dirs;
  ManifestSource source;  // set by `shoal import`

  uint64_t TotalBytes() const;
  uint64_t TotalChunks() const;

  // Sorts files, labels and empty_dirs into canonical order.
  void Canonicalize();

  friend bool operator==(const Manifest& a, const Manifest& b);
};

// Checks every rule of the format. The first violation comes back as
// InvalidArgument (or Corruption for hashes that do not add up), naming the
// field and, for files, the path.
Status ValidateManifest(const Manifest& m);

// Path rules alone: relative, '/'-separated, no '..', '.', empty components,
// NUL, backslash, or control characters; bounded lengths.
Status ValidateRelativePath(const std::string& path);

// Namespace and model-name rules: [a-z0-9][a-z0-9._-]*, at most 128 bytes.
Status ValidateName(const std::string& what, const std::string& name);

}  // namespace shoal

#endif  // SHOAL_MANIFEST_H_
