// MountedVersionImpl: one published version held open for `shoal mount`
// (proto MountedVersion). The model was resolved once, when the mount
// began, so the files never change under the mount.
//
// A chunk is awaited through the same ReadFetcher the HTTP reads use
// (peers, then the chunk's owner, then the origin; a cold read waits only
// for its own chunk, with the read-ahead the caller asks for); a chunk
// already cached is answered at once. The answer carries the chunk file's
// descriptor, and a ChunkSpan pins the chunk for as long as the caller
// holds the handle.
//
// Each chunk call checks the token the mount was opened with, as the HTTP
// reads check theirs: once it expires, or the agent hears it was revoked,
// the mount reads nothing more (Unauthenticated).
//
// Thread-safety: a Cap'n Proto server; runs on the control socket's event
// loop thread. The fetcher's callbacks come back to it through a
// cross-thread fulfiller.
#ifndef SHOAL_AGENT_DAEMON_MOUNT_VERSION_H_
#define SHOAL_AGENT_DAEMON_MOUNT_VERSION_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "read/model_resolver.h"
#include "read/read_fetcher.h"
#include "shoal/chunk_store.h"
#include "shoal/proto/agent.capnp.h"
#include "shoal/token.h"
#include "shoal/token_revocations.h"

namespace shoal {

class MountedVersionImpl final : public proto::MountedVersion::Server {
 public:
  // `token` is the one `model` was resolved with. REQUIRES: `revocations`,
  // `fetcher` and `store` outlive the capability.
  MountedVersionImpl(std::shared_ptr<const ResolvedModel> model, const std::string& token,
                     const RevocationList& revocations, ReadFetcher& fetcher, ChunkStore& store);

 protected:
  kj::Promise<void> files(FilesContext c) override;
  kj::Promise<void> chunk(ChunkContext c) override;

 private:
  // Answers with the piece once its chunk is stored; tries again (up to
  // `attempts_left`) if the chunk is evicted between the two.
  kj::Promise<void> Answer(ChunkContext c, std::shared_ptr<const ReadFile> file, uint64_t piece,
                           uint64_t last_piece, int attempts_left);

  // OK while the token is neither expired nor revoked.
  Status TokenStillValid() const;

  const std::shared_ptr<const ResolvedModel> model_;
  std::optional<TokenClaims> claims_;  // unsigned; the tracker verified the token at open
  const RevocationList& revocations_;
  ReadFetcher& fetcher_;
  ChunkStore& store_;
  std::vector<std::shared_ptr<const ReadFile>> reads_;  // per file, in manifest order
};

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_MOUNT_VERSION_H_
