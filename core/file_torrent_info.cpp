#include "shoal/file_torrent_info.h"

#include <cassert>
#include <map>
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
void InfoTail(const std::string& name, uint32_t piece_size, BencodeWriter* out) {
  out->Bytes("meta version");
  out->Int(2);
  out->Bytes("name");
  out->Bytes(name);
  out->Bytes("piece length");
  out->Int(piece_size);
  out->Bytes("private");
  out->Int(1);
  out->End();
}

}  // namespace

std::string FileTorrentInfo(const FileEntry& file, uint32_t piece_size) {
  assert(file.size > 0);
  BencodeWriter out;
  out.BeginDict();
  out.Bytes("file tree");
  out.BeginDict();
  FileTreeEntry(file.pieces_root, file.size, &out);
  out.End();
  InfoTail(file.pieces_root.ToHex(), piece_size, &out);
  return out.Take();
}

Digest FileTorrentInfoHash(const FileEntry& file, uint32_t piece_size) {
  std::string info = FileTorrentInfo(file, piece_size);
  return Sha256::Of(info.data(), info.size());
}

std::vector<const FileEntry*> BundledFiles(const Manifest& m) {
  std::vector<const FileEntry*> out;
  std::map<PiecesRoot, bool> distinct;
  for (const FileEntry& f : m.files) {
    if (!IsSmallFile(f, m.piece_size)) continue;
    out.push_back(&f);
    distinct[f.pieces_root] = true;
  }
  if (distinct.size() < 2) out.clear();
  return out;
}

Result<std::string> BundleTorrentInfo(const std::vector<const FileEntry*>& files, uint32_t piece_size) {
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
      return Status::InvalidArgument("file '" + f->path + "' has pieces root " + f->pieces_root.ShortHex() +
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
  InfoTail(name_hash.Finish().ToHex(), piece_size, &out);
  return out.Take();
}

std::vector<Digest> VersionTorrentHashes(const Manifest& m) {
  std::vector<Digest> out;
  for (const FileEntry& f : m.files) {
    if (f.size > 0) out.push_back(FileTorrentInfoHash(f, m.piece_size));
  }
  std::vector<const FileEntry*> bundled = BundledFiles(m);
  if (!bundled.empty()) {
    auto info = BundleTorrentInfo(bundled, m.piece_size);
    if (info.ok()) out.push_back(Sha256::Of(info->data(), info->size()));
  }
  return out;
}

}  // namespace shoal
