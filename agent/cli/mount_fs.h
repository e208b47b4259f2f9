// MountFs: the FUSE low-level operations of `shoal mount`, over a
// MountTree and a MountLink. Read-only: every call that would change
// anything answers EROFS. Files never change, so the kernel keeps their
// pages (keep_cache) and their attributes for a day.
//
// A read answers with the chunk files the agent hands over (a descriptor
// and an offset for each piece it covers), keeping the last `open_chunks`
// of them open; libfuse splices their pages into the kernel's answer, or
// copies them where the kernel cannot splice. A read that continues a
// run of back-to-back reads on the same open file longer than 2 MiB (a
// stream, not one large read the kernel split up) asks the agent to fetch
// the next `read_ahead` pieces too, and once an eighth into a piece reads
// the first 4 MiB of the next chunk file ahead of the stream (without
// copying them), so that the kernel's read-ahead of that file is under way
// when the stream gets there. A chunk that cannot be had (the agent gone,
// or slower than the link's bound) fails the read with EIO.
//
// Thread-safety: FUSE calls the operations from many threads at once.
#ifndef SHOAL_AGENT_CLI_MOUNT_FS_H_
#define SHOAL_AGENT_CLI_MOUNT_FS_H_

#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "cli/mount_link.h"
#include "cli/mount_tree.h"

namespace shoal {

struct MountFsOptions {
  size_t open_chunks = 16;       // chunk files kept open (and pinned) for reads
  uint32_t read_ahead = 4;       // pieces fetched ahead of a stream of reads
  double cache_seconds = 86400;  // how long the kernel keeps names and attributes
  bool splice = true;            // let libfuse splice chunk files into answers, not copy them
};

class MountFs {
 public:
  // REQUIRES: `link` and `tree` outlive the FUSE session.
  MountFs(const MountFsOptions& options, MountLink& link, const MountTree& tree);
  MountFs(const MountFs&) = delete;
  MountFs& operator=(const MountFs&) = delete;

  // The operations; each finds its MountFs in fuse_req_userdata.
  static const fuse_lowlevel_ops& Ops();

 private:
  struct Impl;
  // The chunk under `piece` of `file`, from the open ones or the agent.
  Result<std::shared_ptr<ChunkLease>> Lease(uint32_t file, uint64_t piece, uint64_t last_piece);

  // Constant after construction.
  const MountFsOptions options_;
  MountLink& link_;
  const MountTree& tree_;

  std::mutex mu_;
  // Protected by mu_: the open chunks, most recently used first.
  using Key = std::pair<uint32_t, uint64_t>;  // (file, piece)
  std::list<std::pair<Key, std::shared_ptr<ChunkLease>>> lru_;
  std::map<Key, decltype(lru_)::iterator> by_key_;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_MOUNT_FS_H_
