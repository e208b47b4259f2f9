// Peer-to-peer benchmark: one process seeds a generated file from its chunk
// store, another downloads it through its own TorrentEngine. Run by
// p2p_bench.sh, which starts both and reports; not a test.
//
//   p2p_bench seed  --dir D --size BYTES --piece BYTES --entry FILE --port-file FILE --done FILE
//                   [--files K] [--sessions N]
//   p2p_bench leech --dir D --entry FILE --peer PORT --done FILE [--sessions N]
//
// --files K splits the bytes into K files, one torrent each, as a
// checkpoint's shards are; --sessions N gives an engine N peer sessions
// (an agent's --peer-sessions), among which the torrents are spread. The
// seeder's port file says its first port and its session count, and the
// leecher connects each torrent to the seeder's session for it.
//
// With --tls DIR on both, peers are admitted by certificate and speak TLS,
// as agents do by default: the seeder makes a CA and a certificate for each
// end in DIR before it writes its port file, and the leecher reads its own.
// Adding --auth 1 on both keeps the certificates but speaks plain
// BitTorrent, each end proving membership first (the tracker's
// --peer-security auth).
// With --sync 1, the leecher's store fsyncs each chunk before it is visible,
// as an agent's does by default (--cache-sync). --disk-threads N sets the
// engine's disk threads (an agent's --disk-threads).
//
// Each process prints one JSON line: the CPU it used (user + system, all
// threads) during the transfer only, and its peak and final anonymous RSS.
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "p2p/torrent_engine.h"
#include "shoal/chunk_hash.h"
#include "shoal/chunk_store.h"
#include "shoal/peer_cert.h"
#include "shoal/piece_hasher.h"
#include "shoal/utc_time.h"

using namespace shoal;

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "p2p_bench: %s\n", what.c_str());
  std::exit(1);
}

// Piece i of file j is stream j * kFileStride + i.
constexpr uint64_t kFileStride = 1000003;

// The bytes of piece `i`: a fast deterministic stream, so the leecher can
// check what it got without a copy of the file.
void FillPiece(uint64_t i, uint8_t* out, size_t len) {
  uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull;
  size_t w = 0;
  for (; w + 8 <= len; w += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(out + w, &x, 8);
  }
  for (; w < len; ++w) out[w] = static_cast<uint8_t>(w);
}

double CpuSeconds(double* sys = nullptr) {
  struct rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  if (sys != nullptr) *sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

// CPU seconds (user + system) of each thread of this process, by thread ID.
std::map<int, double> ThreadCpu() {
  std::map<int, double> out;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), {});
    const size_t paren = text.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(text.substr(paren + 2));
    std::string v;
    double utime = 0, stime = 0;
    // after the name: state is field 3; utime and stime are fields 14 and 15
    for (int field = 3; field <= 15 && fields >> v; ++field) {
      if (field == 14) utime = std::stod(v);
      if (field == 15) stime = std::stod(v);
    }
    out[std::stoi(e->d_name)] = (utime + stime) / tick;
  }
  ::closedir(d);
  return out;
}

// The most CPU any one thread used between two ThreadCpu() samples: on a
// peer process, its session's network thread, which bounds its rate.
double BusiestThread(const std::map<int, double>& before, const std::map<int, double>& after) {
  double most = 0;
  for (const auto& [tid, cpu] : after) {
    auto b = before.find(tid);
    most = std::max(most, cpu - (b == before.end() ? 0 : b->second));
  }
  return most;
}

// A field of /proc/self/status, in KiB.
long StatusKib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  size_t n = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':') {
      return std::stol(line.substr(n + 1));
    }
  }
  return -1;
}

// Samples anonymous RSS every 50 ms, since VmHWM also counts file pages.
struct RssSampler {
  std::atomic<bool> stop{false};
  std::atomic<long> peak_anon_kib{0};
  std::thread thread{[this] {
    while (!stop) {
      long a = StatusKib("RssAnon");
      if (a > peak_anon_kib) peak_anon_kib = a;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }};
  ~RssSampler() {
    stop = true;
    thread.join();
  }
};

std::map<std::string, std::string> Flags(int argc, char** argv) {
  std::map<std::string, std::string> f;
  for (int i = 2; i + 1 < argc; i += 2) f[argv[i]] = argv[i + 1];
  return f;
}

std::unique_ptr<ChunkStore> OpenStore(const std::string& dir, bool sync) {
  StoreOptions so;
  so.dir = dir;
  so.capacity_bytes = 64ull << 30;
  so.sync = sync;
  auto s = ChunkStore::Open(so);
  if (!s.ok()) Die(s.status().ToString());
  return std::move(*s);
}

void WriteFileAtomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  std::rename(tmp.c_str(), path.c_str());
}

void WaitForFile(const std::string& path) {
  while (::access(path.c_str(), F_OK) != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// Entry file: size, piece size, then one hex chunk ID per line.
std::string EncodeEntry(uint64_t size, uint32_t piece, const std::vector<ChunkId>& ids) {
  std::ostringstream o;
  o << size << " " << piece << "\n";
  for (const auto& id : ids) o << id.ToHex() << "\n";
  return o.str();
}

FileEntry DecodeEntry(const std::string& path, uint32_t* piece) {
  std::ifstream in(path);
  FileEntry e;
  e.path = "bench.bin";
  in >> e.size >> *piece;
  std::string hex;
  std::vector<ChunkId> ids;
  while (in >> hex) ids.push_back(*ChunkId::ParseHex(hex));
  if (ids.size() == 1) {
    e.pieces_root = PiecesRoot::From(ids[0]);
  } else {
    e.piece_layer = ids;
    e.pieces_root = PiecesRootFromLayer(ids, *piece);
  }
  return e;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An identity for `name` from the CA in `dir`, written there as
// name.pem and name.key.
PeerIdentity IssueIdentity(const PeerCa& ca, const std::string& dir, const std::string& name) {
  auto key = GeneratePeerKey();
  if (!key.ok()) Die(key.status().ToString());
  auto cert = ca.Issue(key->public_key_pem, name, NowMs(), 24 * 3600 * 1000);
  if (!cert.ok()) Die(cert.status().ToString());
  WriteFileAtomically(dir + "/" + name + ".pem", cert->cert_pem);
  WriteFileAtomically(dir + "/" + name + ".key", key->private_key_pem);
  return PeerIdentity{ca.cert_pem(), cert->cert_pem, key->private_key_pem, cert->not_after_ms};
}

// Engine options, and the identity to give the engine: TLS with --tls,
// proof then plain with --tls and --auth.
EngineOptions BenchOptions(std::map<std::string, std::string>& f, const std::string& role,
                           PeerIdentity* identity) {
  EngineOptions o;
  if (f.count("--disk-threads")) o.disk_threads = std::stoi(f["--disk-threads"]);
  if (f.count("--sessions")) o.sessions = std::stoi(f["--sessions"]);
  if (!f.count("--tls")) return o;
  o.await_peer_identity = true;
  const std::string dir = f["--tls"];
  if (role == "seed") {
    auto ca = PeerCa::Create("p2p_bench CA", NowMs(), 24 * 3600 * 1000);
    if (!ca.ok()) Die(ca.status().ToString());
    WriteFileAtomically(dir + "/ca.pem", (*ca)->cert_pem());
    IssueIdentity(**ca, dir, "leech");
    *identity = IssueIdentity(**ca, dir, "seed");
  } else {
    *identity = PeerIdentity{ReadAll(dir + "/ca.pem"), ReadAll(dir + "/leech.pem"),
                             ReadAll(dir + "/leech.key"), 0};
  }
  identity->auth_only = f.count("--auth") > 0;
  return o;
}

// Starts an engine as BenchOptions says.
std::unique_ptr<TorrentEngine> StartEngine(std::map<std::string, std::string>& f,
                                           const std::string& role, ChunkStore& store) {
  PeerIdentity identity;
  EngineOptions o = BenchOptions(f, role, &identity);
  auto engine = TorrentEngine::Start(o, store);
  if (!engine.ok()) Die(engine.status().ToString());
  if (o.await_peer_identity) {
    Status s = (*engine)->SetPeerIdentity(identity);
    if (!s.ok()) Die(s.ToString());
  }
  return std::move(engine).value();
}

int Seed(std::map<std::string, std::string>& f) {
  const uint64_t size = std::stoull(f["--size"]);
  const uint32_t piece = static_cast<uint32_t>(std::stoul(f["--piece"]));
  const uint64_t files = f.count("--files") ? std::stoull(f["--files"]) : 1;
  if (files < 1 || files > 1000 || size / files == 0)
    Die("--files must be 1..1000 and below --size");
  auto store = OpenStore(f["--dir"], f["--sync"] == "1");
  std::vector<uint8_t> buf(piece);
  for (uint64_t j = 0; j < files; ++j) {
    const uint64_t file_size = j + 1 < files ? size / files : size - (files - 1) * (size / files);
    const uint64_t pieces = (file_size + piece - 1) / piece;
    std::vector<ChunkId> ids;
    for (uint64_t i = 0; i < pieces; ++i) {
      size_t len = static_cast<size_t>(std::min<uint64_t>(piece, file_size - i * piece));
      FillPiece(j * kFileStride + i, buf.data(), len);
      ChunkId id = ComputeChunkId(
          buf.data(), len, pieces == 1 ? NextPowerOfTwo(BlockCount(len)) : piece / kBlockSize);
      Status s = store->Put(id, buf.data(), len);
      if (!s.ok()) Die(s.ToString());
      ids.push_back(id);
    }
    WriteFileAtomically(f["--entry"] + "." + std::to_string(j), EncodeEntry(file_size, piece, ids));
  }
  std::vector<uint8_t>().swap(buf);
  WriteFileAtomically(f["--entry"], std::to_string(files));
  auto engine = StartEngine(f, "seed", *store);
  for (uint64_t j = 0; j < files; ++j) {
    uint32_t ps = 0;
    FileEntry e = DecodeEntry(f["--entry"] + "." + std::to_string(j), &ps);
    auto id = engine->AddFile(e, piece, "");
    if (!id.ok()) Die(id.status().ToString());
  }
  RssSampler rss;
  double cpu0 = CpuSeconds();
  const std::map<int, double> threads0 = ThreadCpu();
  WriteFileAtomically(f["--port-file"], std::to_string(engine->listen_port()) + " " +
                                            std::to_string(engine->sessions()));
  WaitForFile(f["--done"]);
  double cpu = CpuSeconds() - cpu0;
  const double busiest = BusiestThread(threads0, ThreadCpu());
  EngineStats st = engine->Stats();
  std::printf(
      "{\"role\":\"seed\",\"cpu_s\":%.3f,\"busiest_thread_s\":%.3f,\"peak_anon_rss_kib\":%ld,"
      "\"hwm_kib\":%ld,\"bytes_up\":%llu}\n",
      cpu, busiest, rss.peak_anon_kib.load(), StatusKib("VmHWM"),
      static_cast<unsigned long long>(st.bytes_up));
  return 0;
}

int Leech(std::map<std::string, std::string>& f) {
  const uint64_t files = std::stoull(ReadAll(f["--entry"]));
  std::vector<FileEntry> entries;
  uint32_t piece = 0;
  uint64_t total = 0;
  for (uint64_t j = 0; j < files; ++j) {
    entries.push_back(DecodeEntry(f["--entry"] + "." + std::to_string(j), &piece));
    total += entries.back().size;
  }
  // "first-port sessions" of the seeder
  std::istringstream peer(f["--peer"]);
  uint32_t first_port = 0, seeder_sessions = 1;
  peer >> first_port >> seeder_sessions;
  auto store = OpenStore(f["--dir"], f["--sync"] == "1");
  RssSampler rss;
  double cpu0 = CpuSeconds();
  auto engine = StartEngine(f, "leech", *store);
  std::vector<FileTorrentId> ids;
  for (const FileEntry& e : entries) {
    auto id = engine->AddFile(e, piece, "");
    if (!id.ok()) Die(id.status().ToString());
    ids.push_back(*id);
  }
  auto t0 = std::chrono::steady_clock::now();
  const std::map<int, double> threads0 = ThreadCpu();
  for (const FileTorrentId& id : ids) {
    const auto port =
        static_cast<uint16_t>(first_port + SessionOf(id, static_cast<uint16_t>(seeder_sessions)));
    Status c = engine->ConnectPeer(id, "127.0.0.1", port);
    if (!c.ok()) Die(c.ToString());
  }
  for (const FileTorrentId& id : ids) {
    for (;;) {
      auto r = engine->Progress(id);
      if (!r.ok()) Die(r.status().ToString());
      if (r->complete) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double sys = 0;
  double cpu = CpuSeconds(&sys) - cpu0;
  const double busiest = BusiestThread(threads0, ThreadCpu());
  WriteFileAtomically(f["--done"], "done");
  EngineStats st = engine->Stats();
  long peak = rss.peak_anon_kib.load();
  engine->Stop();
  // Check every byte, outside the timing.
  std::vector<uint8_t> want(piece), got(piece);
  for (uint64_t j = 0; j < files && !f.count("--no-verify"); ++j) {
    const FileEntry& e = entries[j];
    std::vector<ChunkId> chunks = e.ChunkIds();
    for (uint64_t i = 0; i < chunks.size(); ++i) {
      size_t len = static_cast<size_t>(std::min<uint64_t>(piece, e.size - i * piece));
      FillPiece(j * kFileStride + i, want.data(), len);
      auto n = store->Read(chunks[i], 0, got.data(), len);
      if (!n.ok() || *n != len || std::memcmp(want.data(), got.data(), len) != 0) {
        Die("piece " + std::to_string(i) + " of file " + std::to_string(j) +
            " differs after the transfer");
      }
    }
  }
  std::printf(
      "{\"role\":\"leech\",\"seconds\":%.3f,\"bytes\":%llu,\"mb_per_s\":%.1f,"
      "\"cpu_s\":%.3f,\"sys_s\":%.3f,\"busiest_thread_s\":%.3f,\"peak_anon_rss_kib\":%ld,"
      "\"hwm_kib\":%ld,"
      "\"write_stalls\":%llu,\"hash_failures\":%llu,\"verified\":%s}\n",
      secs, static_cast<unsigned long long>(total), static_cast<double>(total) / secs / 1e6, cpu,
      sys, busiest, peak, StatusKib("VmHWM"), static_cast<unsigned long long>(st.write_stalls),
      static_cast<unsigned long long>(st.hash_failures), f.count("--no-verify") ? "false" : "true");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) Die("usage: p2p_bench seed|leech --flag value ...");
  auto f = Flags(argc, argv);
  std::string mode = argv[1];
  if (mode == "seed") return Seed(f);
  if (mode == "leech") return Leech(f);
  Die("unknown mode " + mode);
}
