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
// Thread-safety: none; the simulation is single-threaded.
#ifndef SHOAL_TOOLS_SIM_PIECE_SWARM_H_
#define SHOAL_TOOLS_SIM_PIECE_SWARM_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "flow_network.h"
#include "sim_options.h"

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
    uint32_t have = 0;       // pieces held
    uint32_t unoffered = 0;  // pieces lacked that no live peer holds
    uint32_t up_used = 0;    // peers being uploaded to
    uint32_t down_used = 0;  // pieces being received from peers
    bool dirty = false;      // in dirty_
    std::vector<int> peers;  // connections, both ways
    std::vector<int> up_to;  // receivers of its uploads now
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
  std::vector<int> members_;              // joined and alive
  std::vector<int> dirty_;
  uint64_t peer_bytes_ = 0;
};

}  // namespace shoal::sim

#endif  // SHOAL_TOOLS_SIM_PIECE_SWARM_H_
