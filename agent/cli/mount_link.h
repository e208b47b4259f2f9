// MountLink: `shoal mount`'s line to this node's agent. Opens the version
// once (the agent resolves the reference then, and the link keeps the
// version ID), and asks for chunks as FUSE reads need them.
//
// The Cap'n Proto client lives on one kj event-loop thread the link owns;
// callers on any thread hand their calls to it and wait at most
// `call_timeout`. A dropped connection fails the calls pending on it at
// once; the next call connects again and re-opens the same version by its
// ID (never the tag), so a mount outlives a restart of the agent.
//
// Thread-safety: every method may be called from any thread at once.
#ifndef SHOAL_AGENT_CLI_MOUNT_LINK_H_
#define SHOAL_AGENT_CLI_MOUNT_LINK_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal {

struct MountLinkOptions {
  std::string agent_socket = "/run/shoald/shoald.sock";  // the agent's control socket
  std::string ref;                                       // ns/name[:tag-or-version]
  std::string token;                                     // may read the namespace
  std::chrono::milliseconds call_timeout{30000};         // bound on each call to the agent
};

struct MountedFile {
  std::string path;  // relative, '/'-separated
  uint64_t size = 0;
  uint32_t mode = 0644;
  std::string pieces_root;  // hex
};

struct MountedVersion {
  std::string ns, name;
  std::string version;  // hex version ID
  int64_t created_at_ms = 0;
  uint32_t piece_size = 0;
  std::vector<MountedFile> files;
  std::vector<std::string> empty_dirs;
};

class MountLink;

// One piece in hand: a descriptor this process owns and where the piece
// lies in it. While the lease lives the agent keeps the chunk pinned (as
// long as the connection it came on lasts); the descriptor stays readable
// even after that.
class ChunkLease {
 public:
  ~ChunkLease();
  ChunkLease(const ChunkLease&) = delete;
  ChunkLease& operator=(const ChunkLease&) = delete;

  int fd() const { return fd_; }
  uint64_t offset() const { return offset_; }
  uint64_t length() const { return length_; }

 private:
  friend class MountLink;
  struct Core;
  ChunkLease(std::shared_ptr<Core> core, uint64_t id, int fd, uint64_t offset, uint64_t length)
      : core_(std::move(core)), id_(id), fd_(fd), offset_(offset), length_(length) {}

  std::shared_ptr<Core> core_;
  uint64_t id_;
  int fd_;
  uint64_t offset_, length_;
};

class MountLink {
 public:
  // Connects, opens `options.ref` and reads its files. Unavailable if the
  // agent cannot be reached; the agent's error if it refuses.
  static Result<std::unique_ptr<MountLink>> Open(const MountLinkOptions& options);
  ~MountLink();  // stops the loop thread; leases still held no longer pin
  MountLink(const MountLink&) = delete;
  MountLink& operator=(const MountLink&) = delete;

  const MountedVersion& version() const { return version_; }

  // Piece `piece` of file `file` (its index in version().files), asking
  // the agent to fetch up to `last_piece` meanwhile. Unavailable if the
  // agent is gone or the call outlasts call_timeout.
  // REQUIRES: piece <= last_piece < the file's piece count.
  Result<std::shared_ptr<ChunkLease>> Chunk(uint32_t file, uint64_t piece, uint64_t last_piece);

 private:
  explicit MountLink(std::shared_ptr<ChunkLease::Core> core) : core_(std::move(core)) {}

  std::shared_ptr<ChunkLease::Core> core_;
  MountedVersion version_;  // constant after Open
};

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_MOUNT_LINK_H_
