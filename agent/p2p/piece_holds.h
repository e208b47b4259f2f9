// PieceHolds: the hand-on. A piece an owner has just read from the origin
// exists whole only there; if the owner dies before a peer holds all of it,
// the origin is read again. For a while the owner therefore serves that
// piece only to the chunk's next owners (the tracker's replica orders send
// them for it), so its uplink is not split among every peer that wants the
// rarest piece.
//
// A request for a held piece from any other peer is kept unanswered until
// the hold ends, then refused with a fast-extension reject, so the peer
// picks the piece again (from whoever holds it by then). Keeping it rather
// than refusing at once stops the peer from asking again at once: its
// picker would choose the same rarest piece over and over. A hold ends at
// its deadline, or when one of its receivers says it has the piece (a
// second whole copy exists). A connection keeps at most kMaxKept requests;
// beyond that, it is refused at once.
//
// Receivers are matched by address and listen port: the port a connection
// was made to, or the one an outgoing peer names in its extension
// handshake ("p"); by address alone when the peer named none.
//
// Thread-safety: Hold may be called from any thread; the plugin runs on
// libtorrent's network thread. The counters may be read from any thread.
#ifndef SHOAL_AGENT_P2P_PIECE_HOLDS_H_
#define SHOAL_AGENT_P2P_PIECE_HOLDS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "p2p/file_torrent_id.h"

namespace libtorrent {
struct plugin;
}

namespace shoal {

class PieceHolds {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxKept = 64;  // requests kept per connection

  // Serves piece `piece` of torrent `id` only to `receivers` ("ip", listen
  // port) until `until`, or until one of them has it. A later call for the
  // same piece replaces the hold.
  void Hold(const FileTorrentId& id, uint32_t piece,
            std::vector<std::pair<std::string, uint16_t>> receivers, Clock::time_point until);

  // Whether a request for `piece` from the peer at `ip` with listen port
  // `port` (0: unknown) must wait now.
  bool Withheld(const FileTorrentId& id, int64_t piece, const std::string& ip, uint16_t port,
                Clock::time_point now);
  // The peer at `ip`/`port` says it has `piece`: if it is a receiver, the
  // hold ends.
  void Had(const FileTorrentId& id, int64_t piece, const std::string& ip, uint16_t port);

  std::atomic<uint64_t> holds{0};     // pieces held
  std::atomic<uint64_t> kept{0};      // requests kept until their hold ended
  std::atomic<uint64_t> rejected{0};  // requests refused (after the hold, or over kMaxKept)
  std::atomic<uint64_t> handed{0};    // holds ended by a receiver having the piece

 private:
  struct Held {
    std::vector<std::pair<std::string, uint16_t>> receivers;
    Clock::time_point until;
  };
  static bool IsReceiver(const Held& h, const std::string& ip, uint16_t port);

  // held_.size(), kept with it under mu_: every request and have message
  // on every connection asks, and with nothing held (the default) they are
  // answered without the lock.
  std::atomic<size_t> held_count_{0};
  std::mutex mu_;
  std::map<std::pair<FileTorrentId, int64_t>, Held> held_;  // protected by mu_
};

// The session plugin (lt::session_params::extensions) that applies `holds`.
std::shared_ptr<libtorrent::plugin> NewPieceHoldPlugin(std::shared_ptr<PieceHolds> holds);

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_PIECE_HOLDS_H_
