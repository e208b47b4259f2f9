#include "shoal/file_torrent_info.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <set>
#include <string_view>

#include "shoal/bencode_writer.h"

namespace shoal {
namespace {

std::string_view Raw(const PiecesRoot& root) {
  return std::string_view(reinterpret_cast<const char*>(root.data()), PiecesRoot::kSize);
}

// The `file tree` entry of one file, named by its hex pieces root.
void FileTreeEntry(const PiecesRoot& root, uint64_t size, BencodeWriter* out) {
  out->Bytes(root.ToHex());
  out->BeginDict();
  out->Bytes("");
  out->BeginDict();
  out->Bytes("length");
  out->Int(static_cast<int64_t>(size));
  out->Bytes("pieces root");
  out->Bytes(Raw(root));
  out->End();
  out->End();
}

// The keys after `file tree`, in sorted order.
void InfoTail(const std::string& name, uint32_t piece_size, std::string_view peer_ca,
              BencodeWriter* out) {
  out->Bytes("meta version");
  out->Int(2);
  out->Bytes("name");
  out->Bytes(name);
  out->Bytes("piece length");
  out->Int(piece_size);
  out->Bytes("private");
  out->Int(1);
  if (!peer_ca.empty()) {
    out->Bytes("ssl-cert");
    out->Bytes(peer_ca);
  }
  out->End();
}

// The smallest power of two of at least 16 KiB that holds `size` bytes.
uint32_t PieceLengthFor(uint64_t size) {
  uint64_t length = uint64_t{1} << 14;
  while (length < size) length <<= 1;
  return static_cast<uint32_t>(length);
}

}  // namespace

std::string FileTorrentInfo(const FileEntry& file, uint32_t piece_size, std::string_view peer_ca) {
  assert(file.size > 0);
  BencodeWriter out;
  out.BeginDict();
  out.Bytes("file tree");
  out.BeginDict();
  FileTreeEntry(file.pieces_root, file.size, &out);
  out.End();
  InfoTail(file.pieces_root.ToHex(), piece_size, peer_ca, &out);
  return out.Take();
}

Digest FileTorrentInfoHash(const FileEntry& file, uint32_t piece_size, std::string_view peer_ca) {
  std::string info = FileTorrentInfo(file, piece_size, peer_ca);
  return Sha256::Of(info.data(), info.size());
}

uint32_t BundlePieceLength(const std::vector<const FileEntry*>& files) {
  uint64_t largest = 0;
  for (const FileEntry* f : files) largest = std::max(largest, f->size);
  return PieceLengthFor(largest);
}

std::vector<std::vector<const FileEntry*>> SmallFileBundles(const Manifest& m) {
  // By size class (the bundle piece length each file needs), then by root.
  std::map<uint32_t, std::vector<const FileEntry*>> classes;
  std::map<uint32_t, std::set<PiecesRoot>> distinct;
  for (const FileEntry& f : m.files) {
    if (!IsSmallFile(f, m.piece_size)) continue;
    const uint32_t length = PieceLengthFor(f.size);
    classes[length].push_back(&f);
    distinct[length].insert(f.pieces_root);
  }
  std::vector<std::vector<const FileEntry*>> out;
  for (const auto& [length, files] : classes) {
    if (distinct[length].size() < 2) continue;  // alone in its class: its own torrent
    // The fewest leading bits of the root that bring the class's average
    // bundle to kBundleFiles distinct files or below.
    int bits = 0;
    while ((distinct[length].size() >> bits) > kBundleFiles) ++bits;
    std::vector<std::vector<const FileEntry*>> bundles(size_t{1} << bits);
    for (const FileEntry* f : files) {
      const uint8_t* r = f->pieces_root.data();
      const uint32_t lead =
          (uint32_t{r[0]} << 24) | (uint32_t{r[1]} << 16) | (uint32_t{r[2]} << 8) | r[3];
      bundles[bits == 0 ? 0 : lead >> (32 - bits)].push_back(f);
    }
    for (auto& b : bundles) {
      if (!b.empty()) out.push_back(std::move(b));
    }
  }
  return out;
}

std::map<PiecesRoot, uint64_t> BundlePieces(const std::vector<const FileEntry*>& files) {
  std::map<PiecesRoot, uint64_t> out;
  for (const FileEntry* f : files) out.emplace(f->pieces_root, 0);
  uint64_t piece = 0;
  for (auto& entry : out) entry.second = piece++;
  return out;
}

VersionBundles VersionBundles::Of(const Manifest& m) {
  VersionBundles out;
  out.bundles = SmallFileBundles(m);
  for (size_t k = 0; k < out.bundles.size(); ++k) {
    for (const auto& [root, piece] : BundlePieces(out.bundles[k]))
      out.places[root] = Place{k, piece};
  }
  return out;
}

const VersionBundles::Place* VersionBundles::Find(const FileEntry& f) const {
  auto it = places.find(f.pieces_root);
  return it == places.end() ? nullptr : &it->second;
}

Result<std::string> BundleTorrentInfo(const std::vector<const FileEntry*>& files,
                                      uint32_t piece_size, std::string_view peer_ca) {
  if (files.empty()) return Status::InvalidArgument("a bundle needs at least one small file");
  std::map<PiecesRoot, uint64_t> sizes;  // sorted: the canonical order
  for (const FileEntry* f : files) {
    if (!IsSmallFile(*f, piece_size)) {
      return Status::InvalidArgument("file '" + f->path + "' of " + std::to_string(f->size) +
                                     " bytes does not belong in a bundle at piece size " +
                                     std::to_string(piece_size) + ": only files of one piece do");
    }
    auto [it, added] = sizes.emplace(f->pieces_root, f->size);
    if (!added && it->second != f->size) {
      return Status::InvalidArgument(
          "file '" + f->path + "' has pieces root " + f->pieces_root.ShortHex() +
          " of another file, with another size; the manifest is inconsistent");
    }
  }
  Sha256 name_hash;
  for (const auto& entry : sizes) name_hash.Update(entry.first.data(), PiecesRoot::kSize);

  BencodeWriter out;
  out.BeginDict();
  out.Bytes("file tree");
  out.BeginDict();
  for (const auto& [root, size] : sizes) FileTreeEntry(root, size, &out);
  out.End();
  InfoTail(name_hash.Finish().ToHex(), BundlePieceLength(files), peer_ca, &out);
  return out.Take();
}

std::vector<Digest> VersionTorrentHashes(const Manifest& m, std::string_view peer_ca) {
  std::vector<Digest> out;
  for (const FileEntry& f : m.files) {
    if (f.size > 0) out.push_back(FileTorrentInfoHash(f, m.piece_size, peer_ca));
  }
  for (const std::vector<const FileEntry*>& bundle : SmallFileBundles(m)) {
    auto info = BundleTorrentInfo(bundle, m.piece_size, peer_ca);
    if (info.ok()) out.push_back(Sha256::Of(info->data(), info->size()));
  }
  return out;
}

}  // namespace shoal
