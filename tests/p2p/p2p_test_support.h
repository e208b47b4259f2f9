// What the peer-to-peer tests share: test files with their manifest entries,
// an agent (a chunk store in a temporary folder with an engine on it), and
// waiting for a download.
#ifndef SHOAL_TESTS_P2P_P2P_TEST_SUPPORT_H_
#define SHOAL_TESTS_P2P_P2P_TEST_SUPPORT_H_

#include <ftw.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "p2p/eviction_relay.h"
#include "p2p/torrent_engine.h"
#include "shoal/chunk_store.h"
#include "shoal/manifest.h"
#include "shoal/peer_cert.h"
#include "shoal/piece_hasher.h"
#include "shoal/sha256.h"
#include "shoal/utc_time.h"

namespace shoal {
namespace testing {

class P2pTempDir {
 public:
  P2pTempDir() {
    const char* root = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(root != nullptr && *root != '\0' ? root : "/tmp") + "/shoal-p2p-test-XXXXXX";
    path_ = ::mkdtemp(tmpl.data());
  }
  ~P2pTempDir() {
    ::nftw(
        path_.c_str(),
        [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct TestFile {
  std::vector<uint8_t> data;
  FileEntry entry;
  std::vector<ChunkId> chunks;
  uint32_t piece_size = 0;

  uint64_t PieceBytes(uint64_t i) const {
    uint64_t start = i * piece_size;
    return data.size() - start < piece_size ? data.size() - start : piece_size;
  }
  // What moving pieces [first, last) costs on the wire: peers send whole
  // 16 KiB blocks, the file's last block padded with zeros.
  uint64_t WireBytes(uint64_t first = 0, uint64_t last = UINT64_MAX) const {
    uint64_t n = 0;
    for (uint64_t i = first; i < chunks.size() && i < last; ++i) {
      n += (PieceBytes(i) + 16383) / 16384 * 16384;
    }
    return n;
  }
};

// `size` pseudo-random bytes from `seed`, hashed as a manifest would.
inline TestFile MakeFile(uint64_t seed, size_t size, uint32_t piece_size,
                         const std::string& path = "model.bin") {
  TestFile f;
  f.piece_size = piece_size;
  f.data.resize(size);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 7;
  for (size_t i = 0; i < size; ++i) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    f.data[i] = static_cast<uint8_t>((x * 0x2545f4914f6cdd1dull) >> 56);
  }
  FileHashes h = HashBuffer(f.data.data(), f.data.size(), piece_size);
  f.entry.path = path;
  f.entry.size = h.size;
  f.entry.pieces_root = h.pieces_root;
  f.entry.piece_layer = h.piece_layer;
  f.chunks = f.entry.ChunkIds();
  return f;
}

// A chunk store in its own folder with an engine on it, listening on
// 127.0.0.1, and the store's evictions relayed to the engine.
struct Agent {
  P2pTempDir dir;
  std::shared_ptr<EvictionRelay> relay = std::make_shared<EvictionRelay>();
  std::unique_ptr<ChunkStore> store;
  std::unique_ptr<TorrentEngine> engine;

  explicit Agent(uint64_t capacity = 1ull << 30, int eviction_batch_ms = 50) {
    EngineOptions eo;
    eo.eviction_batch_ms = eviction_batch_ms;
    Open(eo, capacity);
  }
  explicit Agent(const EngineOptions& eo) { Open(eo, 1ull << 30); }
  ~Agent() {
    relay->Detach();
    engine.reset();
  }

  void Open(const EngineOptions& eo, uint64_t capacity) {
    StoreOptions so;
    so.dir = dir.path() + "/cache";
    so.capacity_bytes = capacity;
    so.sync = false;
    so.on_evict = relay->Listener();
    auto s = ChunkStore::Open(so);
    if (!s.ok()) throw std::runtime_error(s.status().ToString());
    store = std::move(*s);
    auto e = TorrentEngine::Start(eo, *store);
    if (!e.ok()) throw std::runtime_error(e.status().ToString());
    engine = std::move(*e);
    relay->Attach(engine.get());
  }

  uint16_t port() const { return engine->listen_port(); }

  // Puts pieces [first, last) of `f` into the store.
  void Seed(const TestFile& f, uint64_t first = 0, uint64_t last = UINT64_MAX) {
    for (uint64_t i = first; i < f.chunks.size() && i < last; ++i) {
      Status s = store->Put(f.chunks[i], f.data.data() + i * f.piece_size, f.PieceBytes(i));
      if (!s.ok()) throw std::runtime_error(s.ToString());
    }
  }

  // Stores piece `i` of `f` with two bytes damaged but recorded as good, as
  // on a peer whose memory or disk went bad after the data was hashed:
  // PutHashed trusts the bytes to match the leaves, so the store cannot
  // tell, and the peer serves bad data.
  void SeedDamaged(const TestFile& f, uint64_t i) {
    const uint8_t* start = f.data.data() + i * f.piece_size;
    std::vector<uint8_t> bytes(start, start + f.PieceBytes(i));
    std::vector<Digest> leaves;
    Sha256 sha;
    for (size_t b = 0; b < bytes.size(); b += 16384) {
      leaves.push_back(sha.Hash(bytes.data() + b, std::min<size_t>(16384, bytes.size() - b)));
    }
    bytes[bytes.size() / 2] ^= 0x5a;
    bytes[bytes.size() / 2 + 1] ^= 0xa5;
    Status s = store->PutHashed(f.chunks[i], bytes.data(), bytes.size(), leaves);
    if (!s.ok()) throw std::runtime_error(s.ToString());
  }

  FileTorrentId Add(const TestFile& f) {
    auto id = engine->AddFile(f.entry, f.piece_size, "");
    if (!id.ok()) throw std::runtime_error(id.status().ToString());
    return *id;
  }

  // Waits until the torrent has every piece; false after `timeout`.
  bool WaitComplete(const FileTorrentId& id,
                    std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      auto p = engine->Progress(id);
      if (p.ok() && p->complete) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // The file as the store materializes it.
  std::vector<uint8_t> Materialized(const TestFile& f) {
    std::string out = dir.path() + "/out-" + std::to_string(counter_++);
    Status s = store->Materialize(f.chunks, f.data.size(), f.piece_size, out, 0644);
    if (!s.ok()) throw std::runtime_error(s.ToString());
    std::ifstream in(out, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }

 private:
  int counter_ = 0;
};

// Polls `cond` every 20 ms; false if it is still false after `timeout`.
template <typename F>
bool Eventually(F cond, std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
}

constexpr int64_t kHour = 3600 * 1000;

// Engine options that wait for SetPeerIdentity, as an agent's do.
inline EngineOptions AwaitingOptions() {
  EngineOptions eo;
  eo.await_peer_identity = true;
  return eo;
}

// An identity in the cluster of `cluster`, with a certificate `issuer`
// signed, valid from `now_ms` for `ttl_ms`.
inline PeerIdentity IdentityFor(const PeerCa& cluster, const PeerCa& issuer,
                                const std::string& name, int64_t now_ms = NowMs(),
                                int64_t ttl_ms = kHour) {
  auto key = GeneratePeerKey();
  if (!key.ok()) throw std::runtime_error(key.status().ToString());
  auto cert = issuer.Issue(key->public_key_pem, name, now_ms, ttl_ms);
  if (!cert.ok()) throw std::runtime_error(cert.status().ToString());
  PeerIdentity id;
  id.ca_pem = cluster.cert_pem();
  id.cert_pem = cert->cert_pem;
  id.key_pem = key->private_key_pem;
  id.not_after_ms = cert->not_after_ms;
  return id;
}

}  // namespace testing
}  // namespace shoal

#endif  // SHOAL_TESTS_P2P_P2P_TEST_SUPPORT_H_
