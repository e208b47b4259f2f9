// PieceSwarm: the BitTorrent side of the simulated agents, modelled.
//
// Each node that pulls joins the swarm and connects to up to
// `peers_wanted` random members already in it (as an announce hands out
// peers), up to `max_peers` connections per node; connections are both
// ways. Every node knows which of its peers hold which pieces (as have
// messages tell), so it counts each piece's availability among its peers.
//
// Exchange: a node uploads to at most `upload_slots` peers at once (the
// unchoked ones: 4 regular + 1 optimistic in libtorrent's terms) and
// receives at most `download_slots` pieces from peers at once. A free
// upload slot goes to a random interested peer; the receiver takes the
// rarest piece (by its own peers' counts) that the sender has and it has
// neither nor is receiving. A slot is held for one piece, then chosen
// again: choking rounds and tit-for-tat are not modelled. Whole pieces
// move as one flow on the FlowNetwork; a piece is offered on once complete.
//
// Hand-on (SimOptions::hand_on): a node told to copy a fresh chunk (HandOn,
// from the tracker's replica order) asks for that piece before any other,
// beyond its download slots, as libtorrent's set_piece_deadline sends
// time-critical requests at once: from a peer uploading to it already, at
// once, or from one with a free upload slot. With `hand_on_connect` it
// connects to the chunk's owner (who fetched it from the origin) if it is
// not a peer of it; otherwise it takes the piece from the first peer that
// has it. The owner, by `hand_on_owner`: does nothing special (kNone: a
// receiver gets one of its slots when it frees, by chance); serves the
// receivers among its peers before anyone else with its free upload slots
// (kFirst); or, as kFirst, and gives that piece to no other peer until
// those receivers hold it (kOnly). A hand-on flow has weight
// `hand_on_weight` on both its links (FlowNetwork): libtorrent peer classes
// with a higher upload and download priority, under rate limits near the
// links' speed.
//
// Thread-safety: none; the simulation is single-threaded.
#ifndef SHOAL_TOOLS_SIM_PIECE_SWARM_H_
#define SHOAL_TOOLS_SIM_PIECE_SWARM_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "sim/flow_network.h"
#include "sim/sim_options.h"

namespace shoal::sim {

class PieceSwarm {
 public:
  // `net` must outlive the swarm.
  PieceSwarm(const SimOptions& options, FlowNetwork& net);

  // `node` joins the swarm (its pull starts) and connects to peers.
  void Join(int node);
  // `node` died: its peers forget it. The caller cancels its flows first
  // (TransferCancelled for each peer flow).
  void Leave(int node);

  // `node` now holds `chunk` (from a peer or the origin). False if it did already.
  bool Add(int node, int chunk);
  bool Has(int node, int chunk) const { return Bit(have_, node, chunk); }
  // A peer flow ended early; the receiver may ask for the piece again.
  void TransferCancelled(const FlowNetwork::Flow& f);
  // A peer flow finished: frees both slots; the caller Adds the chunk.
  void TransferDone(const FlowNetwork::Flow& f);
  // `receiver` is to copy `chunk` at once; `owner` fetched it from the
  // origin (-1: unknown or dead). Nothing if `receiver` holds it or is dead.
  void HandOn(int receiver, int chunk, int owner);

  // Starts what transfers the nodes touched since the last call can.
  void StartTransfers(double now);

  bool joined(int node) const { return nodes_[static_cast<size_t>(node)].joined; }
  bool complete(int node) const { return nodes_[static_cast<size_t>(node)].have == chunks_; }
  size_t held(int node) const { return nodes_[static_cast<size_t>(node)].have; }
  // Chunks `node` lacks that none of its live peers holds.
  uint32_t unoffered(int node) const { return nodes_[static_cast<size_t>(node)].unoffered; }
  // True if `node` lacks `chunk`, receives it from nobody, and no peer offers it.
  bool Unoffered(int node, int chunk) const;
  // Live members of the swarm holding `chunk`.
  uint32_t holders(int chunk) const { return holders_[static_cast<size_t>(chunk)]; }
  size_t live_members() const { return members_.size(); }
  uint64_t peer_bytes() const { return peer_bytes_; }

 private:
  struct Node {
    bool joined = false, dead = false;
    uint32_t have = 0;           // pieces held
    uint32_t unoffered = 0;      // pieces lacked that no live peer holds
    uint32_t up_used = 0;        // peers being uploaded to
    uint32_t down_used = 0;      // pieces being received from peers
    bool dirty = false;          // in dirty_
    std::vector<int> peers;      // connections, both ways
    std::vector<int> up_to;      // receivers of its uploads now
    std::vector<int> deadlines;  // chunks it was told to copy at once, not yet held
    std::vector<int> handing;    // chunks it fetched that have receivers not yet holding them
  };
  struct HandOnChunk {
    int owner = -1;              // who fetched it, while alive
    std::vector<int> receivers;  // told to copy it, not yet holding it, alive
  };
  bool Bit(const std::vector<uint64_t>& bits, int node, int chunk) const {
    return (bits[Word(node, chunk)] >> (chunk % 64)) & 1u;
  }
  size_t Word(int node, int chunk) const {
    return static_cast<size_t>(node) * words_ + static_cast<size_t>(chunk) / 64;
  }
  uint16_t& Avail(int node, int chunk) {
    return avail_[static_cast<size_t>(node) * chunks_ + static_cast<size_t>(chunk)];
  }
  void Connect(int a, int b);
  // `holder` gained (+1) or lost (-1) `chunk`; its peers' counts follow.
  void Offer(int holder, int chunk, int delta);
  void Touch(int node);
  // The rarest piece `from` can give `to`, or -1.
  int Pick(int from, int to);
  bool CanReceive(int node) const;
  bool Connected(int a, int b) const;
  // `to` lacks `chunk`, receives it from nobody, and is a peer of `from`.
  bool Wants(int from, int to, int chunk) const;
  // `from` is uploading to `to` now: a request for another piece needs no slot.
  bool Unchoked(int from, int to) const;
  // `from` owes a free upload slot to a hand-on receiver other than `to`.
  bool Reserved(int from, int to) const;
  // kOnly: `from` keeps `chunk` for its receivers, `to` not among them.
  bool Withheld(int from, int to, int chunk) const;
  // `node` no longer waits for `chunk` as a receiver (it holds it, or died).
  void HandOnEnded(int node, int chunk);
  void FillHandOns(int owner, double now);
  void FillDeadlines(int node, double now);
  void FillUploads(int node, double now);
  void FillDownloads(int node, double now);
  void Send(int from, int to, int chunk, double now);

  const SimOptions options_;
  FlowNetwork& net_;
  const uint32_t chunks_;
  const size_t words_;
  std::mt19937_64 rng_;
  std::vector<Node> nodes_;
  std::vector<uint64_t> have_, pending_;  // words_ per node
  std::vector<uint16_t> avail_;           // chunks_ per node: its live peers holding each
  std::vector<uint32_t> holders_;         // per chunk, live members holding it
  std::vector<HandOnChunk> hand_on_;      // per chunk
  std::vector<int> members_;              // joined and alive
  std::vector<int> dirty_;
  uint64_t peer_bytes_ = 0;
};

}  // namespace shoal::sim

#endif  // SHOAL_TOOLS_SIM_PIECE_SWARM_H_
