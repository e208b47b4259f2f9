// UnofferedPieces: since when each piece of a torrent has been offered by
// no connected peer, as every asker of the agent sees it. The missing-chunk
// rules (shoal/missing_chunk_policy.h) wait that long for a peer before
// the origin; a pull and a read of the same torrent share one clock, so a
// read that comes after a pull has waited does not wait again.
//
// Thread-safety: every method may be called from any thread.
#ifndef SHOAL_AGENT_FETCH_UNOFFERED_PIECES_H_
#define SHOAL_AGENT_FETCH_UNOFFERED_PIECES_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "p2p/file_torrent_id.h"

namespace shoal {

class UnofferedPieces {
 public:
  using Clock = std::chrono::steady_clock;

  // `pieces`: every piece of `torrent` no connected peer offers now (the
  // engine's UnavailablePieces). Returns, for each, when it was first
  // seen so; pieces of the torrent not among them are forgotten, so a
  // piece offered and then lost again waits afresh.
  std::vector<Clock::time_point> Since(const FileTorrentId& torrent,
                                       const std::vector<uint64_t>& pieces, Clock::time_point now);

  // Torrents held (for tests and metrics).
  size_t torrents() const;

 private:
  struct Torrent {
    std::unordered_map<uint64_t, Clock::time_point> since;
    Clock::time_point touched;
  };
  // Forgets torrents nobody asked about for a while. REQUIRES: mu_ held.
  void Prune(Clock::time_point now);

  mutable std::mutex mu_;
  std::unordered_map<FileTorrentId, Torrent> torrents_;  // protected by mu_
  Clock::time_point pruned_;                             // protected by mu_
};

}  // namespace shoal

#endif  // SHOAL_AGENT_FETCH_UNOFFERED_PIECES_H_
