#include "shoal/manifest.h"

#include <algorithm>
#include <unordered_set>

#include "shoal/hex.h"
#include "shoal/merkle.h"
#include "shoal/piece_hasher.h"

namespace shoal {

uint64_t FileEntry::ChunkCount(uint32_t piece_size) const {
  return (size + piece_size - 1) / piece_size;
}

std::vector<ChunkId> FileEntry::ChunkIds() const {
  FileHashes h;
  h.size = size;
  h.pieces_root = pieces_root;
  h.piece_layer = piece_layer;
  return FileChunkIds(h);
}

uint64_t Manifest::TotalBytes() const {
  uint64_t total = 0;
  for (const FileEntry& f : files) total += f.size;
  return total;
}

uint64_t Manifest::TotalChunks() const {
  uint64_t total = 0;
  for (const FileEntry& f : files) total += f.ChunkCount(piece_size);
  return total;
}

void Manifest::Canonicalize() {
  std::sort(files.begin(), files.end(),
            [](const FileEntry& a, const FileEntry& b) { return a.path < b.path; });
  std::sort(labels.begin(), labels.end(),
            [](const Label& a, const Label& b) { return a.key < b.key; });
  std::sort(empty_dirs.begin(), empty_dirs.end());
}

bool operator==(const Manifest& a, const Manifest& b) {
  return a.ns == b.ns && a.name == b.name && a.created_by == b.created_by &&
         a.created_at_ms == b.created_at_ms && a.parent == b.parent && a.labels == b.labels &&
         a.piece_size == b.piece_size && a.files == b.files && a.empty_dirs == b.empty_dirs &&
         a.source == b.source;
}

namespace {

// Shows a hostile string safely inside an error message: truncated, with
// control bytes escaped.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < 120; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex::kLowerDigits[c >> 4];
      out += hex::kLowerDigits[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 120) out += "...";
  return out + "'";
}

// Structural UTF-8 check: lead bytes and continuation counts.
bool IsValidUtf8(const std::string& s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t extra;
    if (c < 0x80) {
      extra = 0;
    } else if ((c & 0xe0) == 0xc0 && c >= 0xc2) {
      extra = 1;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2;
    } else if ((c & 0xf8) == 0xf0 && c <= 0xf4) {
      extra = 3;
    } else {
      return false;
    }
    if (extra > n - i - 1) return false;
    for (size_t k = 1; k <= extra; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += extra + 1;
  }
  return true;
}

bool HasControl(const std::string& s) {
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) return true;
  }
  return false;
}

Status ValidateLabel(const Label& l) {
  if (l.key.empty() || l.key.size() > ManifestLimits::kMaxLabelKeyBytes) {
    return Status::InvalidArgument("label key " + Quote(l.key) + " must be 1 to 128 bytes");
  }
  for (char c : l.key) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-' || c == '/';
    if (!ok) {
      return Status::InvalidArgument("label key " + Quote(l.key) +
                                     " may only hold letters, digits and . _ - /");
    }
  }
  if (l.value.size() > ManifestLimits::kMaxLabelValueBytes) {
    return Status::InvalidArgument("label " + Quote(l.key) + " has a value over 1024 bytes");
  }
  if (l.value.find('\0') != std::string::npos || !IsValidUtf8(l.value)) {
    return Status::InvalidArgument("label " + Quote(l.key) + " has a value that is not UTF-8 text");
  }
  return Status::OK();
}

Status ValidateFile(const FileEntry& f, uint32_t piece_size, uint64_t* total_pieces) {
  SHOAL_RETURN_IF_ERROR(ValidateRelativePath(f.path));
  const std::string where = "file " + Quote(f.path);
  if (f.size > ManifestLimits::kMaxFileSize) {
    return Status::InvalidArgument(where + " is " + std::to_string(f.size) +
                                   " bytes, over the 16 TiB limit");
  }
  if (f.mode > 0777) {
    return Status::InvalidArgument(where + " has mode bits beyond 0777");
  }
  if ((f.size == 0) != f.pieces_root.IsZero()) {
    return Status::InvalidArgument(
        where + (f.size == 0 ? " is empty but has a pieces root" : " has no pieces root"));
  }
  uint64_t expected_layer = f.size > piece_size ? f.ChunkCount(piece_size) : 0;
  if (f.piece_layer.size() != expected_layer) {
    return Status::InvalidArgument(where + " has " + std::to_string(f.piece_layer.size()) +
                                   " piece hashes, but its size " + std::to_string(f.size) +
                                   " needs " + std::to_string(expected_layer));
  }
  *total_pieces += f.ChunkCount(piece_size);
  if (*total_pieces > ManifestLimits::kMaxTotalPieces) {
    return Status::InvalidArgument("manifest has more than " +
                                   std::to_string(ManifestLimits::kMaxTotalPieces) +
                                   " pieces; use a larger piece size");
  }
  if (!f.piece_layer.empty() && PiecesRootFromLayer(f.piece_layer, piece_size) != f.pieces_root) {
    return Status::Corruption(where + " has a piece layer that does not hash to its pieces root");
  }
  if (f.source_etag.size() > ManifestLimits::kMaxEtagBytes || HasControl(f.source_etag) ||
      !IsValidUtf8(f.source_etag)) {
    return Status::InvalidArgument(where + " has a source ETag that is not text of at most " +
                                   std::to_string(ManifestLimits::kMaxEtagBytes) + " bytes");
  }
  return Status::OK();
}

Status ValidateSource(const ManifestSource& s) {
  for (const std::string* field : {&s.url, &s.revision, &s.commit}) {
    if (field->size() > ManifestLimits::kMaxSourceFieldBytes || HasControl(*field) ||
        !IsValidUtf8(*field)) {
      return Status::InvalidArgument("source " + Quote(field->substr(0, 120)) +
                                     " is not text of at most 4096 bytes");
    }
  }
  if (s.url.empty() && !s.empty()) {
    return Status::InvalidArgument("source has a revision or commit but no URL");
  }
  return Status::OK();
}

// Every proper parent folder of `path`: "a/b/c" gives "a" and "a/b".
void AddParents(const std::string& path, std::unordered_set<std::string>* parents) {
  for (size_t pos = path.find('/'); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    parents->insert(path.substr(0, pos));
  }
}

}  // namespace

Status ValidateName(const std::string& what, const std::string& name) {
  if (name.empty() || name.size() > ManifestLimits::kMaxNameBytes) {
    return Status::InvalidArgument(what + " " + Quote(name) + " must be 1 to 128 bytes");
  }
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              (i > 0 && (c == '.' || c == '_' || c == '-'));
    if (!ok) {
      return Status::InvalidArgument(what + " " + Quote(name) +
                                     " must be lowercase letters, digits and . _ - "
                                     "(starting with a letter or digit)");
    }
  }
  return Status::OK();
}

Status ValidateRelativePath(const std::string& path) {
  const std::string where = "path " + Quote(path);
  if (path.empty()) return Status::InvalidArgument("path is empty");
  if (path.size() > ManifestLimits::kMaxPathBytes) {
    return Status::InvalidArgument(where + " is longer than 4096 bytes");
  }
  if (path.find('\0') != std::string::npos) return Status::InvalidArgument(where + " contains NUL");
  if (path.find('\\') != std::string::npos) {
    return Status::InvalidArgument(where + " contains a backslash; use '/' to separate folders");
  }
  if (path[0] == '/')
    return Status::InvalidArgument(where + " is absolute; paths must be relative");
  if (HasControl(path)) return Status::InvalidArgument(where + " contains a control character");
  if (!IsValidUtf8(path)) return Status::InvalidArgument(where + " is not valid UTF-8");
  size_t start = 0;
  while (true) {
    size_t end = path.find('/', start);
    std::string part =
        path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (part.empty()) return Status::InvalidArgument(where + " has an empty component");
    if (part == "..") return Status::InvalidArgument(where + " contains '..'");
    if (part == ".") return Status::InvalidArgument(where + " contains '.'");
    if (part.size() > ManifestLimits::kMaxPathComponentBytes) {
      return Status::InvalidArgument(where + " has a component longer than 255 bytes");
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return Status::OK();
}

Status ValidateManifest(const Manifest& m) {
  SHOAL_RETURN_IF_ERROR(ValidateName("namespace", m.ns));
  SHOAL_RETURN_IF_ERROR(ValidateName("model name", m.name));
  if (m.created_by.size() > ManifestLimits::kMaxCreatorBytes || HasControl(m.created_by) ||
      !IsValidUtf8(m.created_by)) {
    return Status::InvalidArgument("creator " + Quote(m.created_by) +
                                   " must be UTF-8 text of at most 256 bytes");
  }
  if (m.created_at_ms < 0) return Status::InvalidArgument("creation time is before 1970");
  if (m.parent && m.parent->IsZero()) {
    return Status::InvalidArgument("parent version is all zeros; leave it unset instead");
  }
  SHOAL_RETURN_IF_ERROR(ValidatePieceSize(m.piece_size));
  SHOAL_RETURN_IF_ERROR(ValidateSource(m.source));

  if (m.labels.size() > ManifestLimits::kMaxLabels) {
    return Status::InvalidArgument("manifest has " + std::to_string(m.labels.size()) +
                                   " labels; the limit is 64");
  }
  std::unordered_set<std::string> label_keys;
  for (const Label& l : m.labels) {
    SHOAL_RETURN_IF_ERROR(ValidateLabel(l));
    if (!label_keys.insert(l.key).second) {
      return Status::InvalidArgument("label " + Quote(l.key) + " appears twice");
    }
  }

  if (m.files.size() > ManifestLimits::kMaxFiles) {
    return Status::InvalidArgument("manifest has " + std::to_string(m.files.size()) +
                                   " files; the limit is 200000");
  }
  if (m.empty_dirs.size() > ManifestLimits::kMaxEmptyDirs) {
    return Status::InvalidArgument("manifest has more than 100000 empty folders");
  }
  uint64_t total_pieces = 0;
  std::unordered_set<std::string> paths;
  std::unordered_set<std::string> parents;
  for (const FileEntry& f : m.files) {
    SHOAL_RETURN_IF_ERROR(ValidateFile(f, m.piece_size, &total_pieces));
    if (!paths.insert(f.path).second) {
      return Status::InvalidArgument("duplicate path " + Quote(f.path));
    }
    AddParents(f.path, &parents);
  }
  for (const std::string& d : m.empty_dirs) {
    SHOAL_RETURN_IF_ERROR(ValidateRelativePath(d));
    if (!paths.insert(d).second) return Status::InvalidArgument("duplicate path " + Quote(d));
    AddParents(d, &parents);
  }
  for (const std::string& p : parents) {
    if (paths.count(p) != 0) {
      return Status::InvalidArgument(
          "path " + Quote(p) + " is both a file (or empty folder) and a folder of other paths");
    }
  }
  return Status::OK();
}

}  // namespace shoal
