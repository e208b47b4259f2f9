#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>

#include "client/tracker_client.h"
#include "daemon/pull_job.h"
#include "p2p/bundle_metainfo.h"
#include "p2p/torrent_engine.h"
#include "shoal/log.h"
#include "shoal/model_ref.h"

namespace shoal {
namespace {

// How long a seed waits for the tracker to take its announces. A pull that
// starts right after the publish then hears of this seeder in its first
// reply, instead of "nobody else", which sends it to the origin.
constexpr auto kAnnounceWait = std::chrono::seconds(5);

// Waits until the tracker has answered an announce of each torrent, or the
// wait is over; returns how many were answered.
size_t AwaitAnnounces(TorrentEngine& engine, const std::vector<FileTorrentId>& torrents,
                      const std::atomic<bool>* stopping) {
  const auto deadline = std::chrono::steady_clock::now() + kAnnounceWait;
  size_t answered = 0;
  for (const FileTorrentId& id : torrents) {
    for (;;) {
      auto p = engine.Progress(id);
      if (!p.ok() && !p.status().IsUnavailable()) break;  // gone: nothing to wait for
      if (p.ok() && p->tracker_peers >= 0) {
        ++answered;
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) return answered;
      if (stopping != nullptr && stopping->load()) return answered;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return answered;
}

}  // namespace

Result<SeedResult> RunSeed(PullContext& ctx, const std::string& ref_text, const std::string& token,
                           SeedFiles& files, const std::string& dir_label) {
  Result<ModelRef> ref = ModelRef::Parse(ref_text);
  if (!ref.ok()) return ref.status();
  auto tracker = TrackerClient::Connect(ctx.options.tracker, token);
  if (!tracker.ok()) return tracker.status();
  auto version = (*tracker)->Resolve(ref->ns(), ref->name(), ref->ref());
  if (!version.ok()) return version.status();
  const Manifest& m = version->manifest;
  SeedResult out;
  std::vector<FileTorrentId> torrents;
  std::vector<uint8_t> buf;
  // Small files are seeded in the version's bundles, as pulls fetch them.
  const std::vector<std::vector<const FileEntry*>> bundles = SmallFileBundles(m);
  std::set<const FileEntry*> in_bundle;
  for (const auto& b : bundles) in_bundle.insert(b.begin(), b.end());
  for (const FileEntry& f : m.files) {
    if (f.size == 0) continue;
    std::vector<ChunkId> chunks = f.ChunkIds();
    std::string path = dir_label + "/" + f.path;
    int fd = -1;  // opened by the caller, once the file has a chunk the cache lacks
    auto close_fd = [&fd] {
      if (fd >= 0) ::close(fd);
      fd = -1;
    };
    for (uint64_t p = 0; p < chunks.size(); ++p) {
      if (ctx.store.Contains(chunks[p])) continue;
      if (ctx.stopping != nullptr && ctx.stopping->load()) {
        close_fd();
        return Status::Unavailable("seed of " + ref->ToString() +
                                   " cancelled: the agent is stopping");
      }
      if (fd < 0) {
        auto opened = files.OpenFile(f.path);
        if (!opened.ok()) return opened.status().WithContext("open " + path);
        fd = *opened;
      }
      buf.resize(f.ChunkBytes(m.piece_size, p));
      ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(p * m.piece_size));
      if (n != static_cast<ssize_t>(buf.size())) {
        close_fd();
        return Status::Corruption(path + " is shorter than version " + version->id.ShortHex() +
                                  " says");
      }
      Status s = ctx.store.Put(chunks[p], buf.data(), buf.size());
      if (!s.ok()) close_fd();
      if (s.IsCorruption()) {
        return Status::Corruption(path + " differs from version " + version->id.ShortHex() +
                                  " (piece " + std::to_string(p) +
                                  "); seed from the folder that was published");
      }
      SHOAL_RETURN_IF_ERROR(s);
      ++out.chunks;
      out.bytes += buf.size();
    }
    close_fd();
    if (in_bundle.count(&f) != 0) continue;
    auto id = ctx.engine.AddFile(f, m.piece_size, ctx.announce_url);
    if (!id.ok()) return id.status().WithContext("seed " + f.path);
    torrents.push_back(*id);
  }
  for (const auto& bundle : bundles) {
    auto b = ctx.engine.AddBundle(bundle, m.piece_size, ctx.announce_url);
    if (!b.ok()) return b.status().WithContext("seed the small files of " + ref->ToString());
    torrents.push_back(b->id);
  }
  const size_t announced = AwaitAnnounces(ctx.engine, torrents, ctx.stopping);
  Log(announced == torrents.size() ? LogLevel::kInfo : LogLevel::kWarn, "seed.done",
      {{"ref", ref->ToString()},
       {"chunks", out.chunks},
       {"bytes", out.bytes},
       {"torrents", torrents.size()},
       {"announced", announced}});
  return out;
}

}  // namespace shoal
