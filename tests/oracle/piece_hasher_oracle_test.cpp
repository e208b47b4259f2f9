// Oracle test: Shoal's BEP 52 hashing must agree with libtorrent's
// create_torrent, an independent implementation, on files of awkward sizes.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <libtorrent/bencode.hpp>
#include <libtorrent/create_torrent.hpp>
#include <libtorrent/torrent_info.hpp>
#include <random>

#include "shoal/piece_hasher.h"

namespace fs = std::filesystem;
using namespace shoal;

namespace {

struct Oracle {
  std::string pieces_root;  // raw 32 bytes
  std::string piece_layer;  // raw concatenated hashes; empty if none
};

Oracle LibtorrentHashes(const fs::path& file, int piece_size) {
  lt::file_storage storage;
  lt::add_files(storage, file.string());
  lt::create_torrent t(storage, piece_size, lt::create_torrent::v2_only);
  lt::set_piece_hashes(t, file.parent_path().string());
  lt::entry e = t.generate();
  std::vector<char> buf;
  lt::bencode(std::back_inserter(buf), e);
  lt::torrent_info info(buf, lt::from_span);
  Oracle out;
  lt::sha256_hash root = info.files().root(lt::file_index_t{0});
  out.pieces_root.assign(root.data(), root.size());
  const lt::entry* layers = e.find_key("piece layers");
  if (layers != nullptr) {
    const lt::entry* layer = layers->find_key(out.pieces_root);
    if (layer != nullptr) out.piece_layer = layer->string();
  }
  return out;
}

std::string Raw(const std::vector<ChunkId>& layer) {
  std::string out;
  for (const ChunkId& c : layer)
    out.append(reinterpret_cast<const char*>(c.data()), ChunkId::kSize);
  return out;
}

}  // namespace

TEST_CASE("pieces roots and piece layers match libtorrent for awkward sizes", "[oracle]") {
  fs::path dir = fs::temp_directory_path() / ("shoal-oracle-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::mt19937_64 rng(20261129);

  const uint32_t kB = 16384;
  struct Case {
    uint64_t size;
    uint32_t piece;
  };
  std::vector<Case> cases;
  for (uint32_t piece : {16384u, 65536u, 1u << 20}) {
    for (uint64_t size : {uint64_t{1}, uint64_t{kB - 1}, uint64_t{kB}, uint64_t{kB + 1},
                          uint64_t{piece - 1}, uint64_t{piece}, uint64_t{piece + 1},
                          uint64_t{3} * piece + 12345, uint64_t{5} * piece + kB}) {
      cases.push_back({size, piece});
    }
  }
  for (int i = 0; i < 6; ++i) cases.push_back({1 + rng() % (5u << 20), 65536u << (rng() % 4)});
  REQUIRE(cases.size() >= 20);

  std::vector<std::string> paths;
  for (size_t i = 0; i < cases.size(); ++i) {
    fs::path p = dir / ("f" + std::to_string(i));
    std::string data(cases[i].size, '\0');
    for (char& c : data) c = static_cast<char>(rng());
    std::ofstream(p, std::ios::binary)
        .write(data.data(), static_cast<std::streamsize>(data.size()));
    paths.push_back(p.string());
  }

  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    INFO("size " << c.size << ", piece size " << c.piece);
    HashOptions opts;
    opts.piece_size = c.piece;
    opts.read_size = 64 * 1024;  // smaller than some pieces, larger than others
    Result<std::vector<FileHashes>> ours = HashFiles({paths[i]}, opts);
    REQUIRE(ours.ok());
    Oracle theirs = LibtorrentHashes(paths[i], static_cast<int>(c.piece));
    const FileHashes& h = (*ours)[0];
    CHECK(h.size == c.size);
    CHECK(std::string(reinterpret_cast<const char*>(h.pieces_root.data()), 32) ==
          theirs.pieces_root);
    CHECK(Raw(h.piece_layer) == theirs.piece_layer);
  }
  fs::remove_all(dir);
}

TEST_CASE("hashing many files in parallel gives the same hashes as one at a time", "[oracle]") {
  fs::path dir = fs::temp_directory_path() / ("shoal-par-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::mt19937_64 rng(7);
  std::vector<std::string> paths;
  for (int i = 0; i < 12; ++i) {
    fs::path p = dir / ("f" + std::to_string(i));
    std::string data(rng() % (3u << 20), '\0');
    for (char& c : data) c = static_cast<char>(rng());
    std::ofstream(p, std::ios::binary)
        .write(data.data(), static_cast<std::streamsize>(data.size()));
    paths.push_back(p.string());
  }
  HashOptions parallel;
  parallel.piece_size = 65536;
  parallel.threads = 4;
  HashOptions serial = parallel;
  serial.threads = 1;
  auto a = HashFiles(paths, parallel);
  auto b = HashFiles(paths, serial);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  for (size_t i = 0; i < paths.size(); ++i) {
    CHECK((*a)[i].pieces_root == (*b)[i].pieces_root);
    CHECK((*a)[i].piece_layer == (*b)[i].piece_layer);
    Oracle theirs = LibtorrentHashes(paths[i], 65536);
    if ((*a)[i].size > 0) {
      CHECK(std::string(reinterpret_cast<const char*>((*a)[i].pieces_root.data()), 32) ==
            theirs.pieces_root);
    }
  }
  fs::remove_all(dir);
}
