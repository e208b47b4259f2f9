#include "sim/piece_swarm.h"

#include <algorithm>
#include <limits>

namespace shoal::sim {

PieceSwarm::PieceSwarm(const SimOptions& options, FlowNetwork& net)
    : options_(options),
      net_(net),
      chunks_(options.chunks),
      words_((options.chunks + 63) / 64),
      rng_(options.seed * 0x9e3779b97f4a7c15ull + 1),
      nodes_(options.nodes),
      have_(options.nodes * words_, 0),
      pending_(options.nodes * words_, 0),
      avail_(static_cast<size_t>(options.nodes) * options.chunks, 0),
      holders_(options.chunks, 0),
      hand_on_(options.hand_on > 0 ? options.chunks : 0) {}

void PieceSwarm::Touch(int node) {
  Node& n = nodes_[static_cast<size_t>(node)];
  if (n.dirty || n.dead) return;
  n.dirty = true;
  dirty_.push_back(node);
}

void PieceSwarm::Join(int node) {
  Node& n = nodes_[static_cast<size_t>(node)];
  n.joined = true;
  n.unoffered = chunks_ - n.have;
  // As an announce hands out peers: a random sample of the members so far.
  std::vector<int> pool = members_;
  const size_t want = std::min<size_t>(options_.peers_wanted, pool.size());
  for (size_t i = 0; i < want; ++i) {
    std::uniform_int_distribution<size_t> pick(i, pool.size() - 1);
    std::swap(pool[i], pool[pick(rng_)]);
    const int peer = pool[i];
    if (nodes_[static_cast<size_t>(peer)].peers.size() >= options_.max_peers) continue;
    Connect(node, peer);
  }
  members_.push_back(node);
  Touch(node);
}

void PieceSwarm::Connect(int a, int b) {
  nodes_[static_cast<size_t>(a)].peers.push_back(b);
  nodes_[static_cast<size_t>(b)].peers.push_back(a);
  auto learn = [this](int who, int holder) {  // `who` hears `holder`'s bitfield
    Node& n = nodes_[static_cast<size_t>(who)];
    for (size_t w = 0; w < words_; ++w) {
      for (uint64_t bits = have_[static_cast<size_t>(holder) * words_ + w]; bits != 0;
           bits &= bits - 1) {
        const int c = static_cast<int>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
        if (Avail(who, c)++ == 0 && !Has(who, c)) --n.unoffered;
      }
    }
  };
  learn(a, b);
  learn(b, a);
  Touch(a);
  Touch(b);
}

void PieceSwarm::Offer(int holder, int chunk, int delta) {
  for (int p : nodes_[static_cast<size_t>(holder)].peers) {
    Node& n = nodes_[static_cast<size_t>(p)];
    if (n.dead) continue;
    uint16_t& a = Avail(p, chunk);
    if (delta > 0) {
      if (a++ == 0 && !Has(p, chunk)) --n.unoffered;
    } else if (--a == 0 && !Has(p, chunk)) {
      ++n.unoffered;
    }
  }
}

void PieceSwarm::Leave(int node) {
  Node& n = nodes_[static_cast<size_t>(node)];
  n.dead = true;
  members_.erase(std::remove(members_.begin(), members_.end(), node), members_.end());
  for (int c = 0; c < static_cast<int>(chunks_); ++c) {
    if (!Has(node, c)) continue;
    --holders_[static_cast<size_t>(c)];
    if (n.joined) Offer(node, c, -1);
  }
  for (int c : std::vector<int>(n.deadlines)) HandOnEnded(node, c);
  for (int c : n.handing) hand_on_[static_cast<size_t>(c)].owner = -1;
  n.handing.clear();
  for (int p : n.peers) Touch(p);
}

bool PieceSwarm::Add(int node, int chunk) {
  if (Has(node, chunk)) return false;
  Node& n = nodes_[static_cast<size_t>(node)];
  have_[Word(node, chunk)] |= 1ull << (chunk % 64);
  pending_[Word(node, chunk)] &= ~(1ull << (chunk % 64));
  ++n.have;
  ++holders_[static_cast<size_t>(chunk)];
  if (n.joined) {
    if (Avail(node, chunk) == 0) --n.unoffered;
    Offer(node, chunk, +1);
  }
  if (!hand_on_.empty()) HandOnEnded(node, chunk);
  Touch(node);
  return true;
}

void PieceSwarm::HandOn(int receiver, int chunk, int owner) {
  Node& r = nodes_[static_cast<size_t>(receiver)];
  if (r.dead || Has(receiver, chunk)) return;
  HandOnChunk& h = hand_on_[static_cast<size_t>(chunk)];
  if (owner >= 0 && !nodes_[static_cast<size_t>(owner)].dead && owner != h.owner) {
    if (h.owner >= 0) {
      std::vector<int>& old = nodes_[static_cast<size_t>(h.owner)].handing;
      old.erase(std::remove(old.begin(), old.end(), chunk), old.end());
    }
    h.owner = owner;
    nodes_[static_cast<size_t>(owner)].handing.push_back(chunk);
  }
  // The order names the owner: a receiver not connected to it connects.
  if (options_.hand_on_connect && h.owner >= 0 && r.joined && owner == h.owner &&
      nodes_[static_cast<size_t>(owner)].joined && !Connected(receiver, owner) &&
      r.peers.size() < options_.max_peers &&
      nodes_[static_cast<size_t>(owner)].peers.size() < options_.max_peers)
    Connect(receiver, owner);
  if (std::find(h.receivers.begin(), h.receivers.end(), receiver) == h.receivers.end()) {
    h.receivers.push_back(receiver);
    r.deadlines.push_back(chunk);
  }
  Touch(receiver);
  if (h.owner >= 0) Touch(h.owner);
}

void PieceSwarm::HandOnEnded(int node, int chunk) {
  std::vector<int>& d = nodes_[static_cast<size_t>(node)].deadlines;
  auto it = std::find(d.begin(), d.end(), chunk);
  if (it == d.end()) return;
  d.erase(it);
  HandOnChunk& h = hand_on_[static_cast<size_t>(chunk)];
  h.receivers.erase(std::remove(h.receivers.begin(), h.receivers.end(), node), h.receivers.end());
  if (h.owner < 0) return;
  Touch(h.owner);  // a slot it kept, or a piece it withheld, is free for others
  if (h.receivers.empty()) {
    std::vector<int>& handing = nodes_[static_cast<size_t>(h.owner)].handing;
    handing.erase(std::remove(handing.begin(), handing.end(), chunk), handing.end());
    h.owner = -1;
  }
}

bool PieceSwarm::Connected(int a, int b) const {
  const std::vector<int>& pa = nodes_[static_cast<size_t>(a)].peers;
  const std::vector<int>& pb = nodes_[static_cast<size_t>(b)].peers;
  const std::vector<int>& p = pa.size() <= pb.size() ? pa : pb;
  return std::find(p.begin(), p.end(), pa.size() <= pb.size() ? b : a) != p.end();
}

bool PieceSwarm::Wants(int from, int to, int chunk) const {
  const Node& b = nodes_[static_cast<size_t>(to)];
  return b.joined && !b.dead && !Has(to, chunk) && !Bit(pending_, to, chunk) && Connected(from, to);
}

bool PieceSwarm::Unchoked(int from, int to) const {
  const std::vector<int>& up = nodes_[static_cast<size_t>(from)].up_to;
  return std::find(up.begin(), up.end(), to) != up.end();
}

bool PieceSwarm::Reserved(int from, int to) const {
  if (options_.hand_on_owner == HandOnOwner::kNone) return false;
  for (int c : nodes_[static_cast<size_t>(from)].handing) {
    for (int r : hand_on_[static_cast<size_t>(c)].receivers)
      if (r != to && Wants(from, r, c) && !Unchoked(from, r)) return true;
  }
  return false;
}

bool PieceSwarm::Withheld(int from, int to, int chunk) const {
  const HandOnChunk& h = hand_on_[static_cast<size_t>(chunk)];
  if (options_.hand_on_owner != HandOnOwner::kOnly || h.owner != from) return false;
  bool waiting = false;  // a receiver the owner can serve still lacks it
  for (int r : h.receivers) {
    if (r == to) return false;
    const Node& n = nodes_[static_cast<size_t>(r)];
    waiting = waiting || (n.joined && !n.dead && Connected(from, r));
  }
  return waiting;
}

bool PieceSwarm::Unoffered(int node, int chunk) const {
  return !Has(node, chunk) && !Bit(pending_, node, chunk) &&
         avail_[static_cast<size_t>(node) * chunks_ + static_cast<size_t>(chunk)] == 0;
}

void PieceSwarm::TransferCancelled(const FlowNetwork::Flow& f) {
  Node& from = nodes_[static_cast<size_t>(f.src)];
  Node& to = nodes_[static_cast<size_t>(f.dst)];
  --from.up_used;
  from.up_to.erase(std::find(from.up_to.begin(), from.up_to.end(), f.dst));
  --to.down_used;
  pending_[Word(f.dst, f.chunk)] &= ~(1ull << (f.chunk % 64));
  Touch(f.src);
  Touch(f.dst);
}

void PieceSwarm::TransferDone(const FlowNetwork::Flow& f) {
  TransferCancelled(f);
  peer_bytes_ += static_cast<uint64_t>(f.bytes);
}

bool PieceSwarm::CanReceive(int node) const {
  const Node& n = nodes_[static_cast<size_t>(node)];
  return n.joined && !n.dead && n.have < chunks_ && n.down_used < options_.download_slots;
}

int PieceSwarm::Pick(int from, int to) {
  for (int c : nodes_[static_cast<size_t>(to)].deadlines) {
    if (Has(from, c) && !Bit(pending_, to, c)) return c;
  }
  const bool withholds = !nodes_[static_cast<size_t>(from)].handing.empty();
  const size_t f = static_cast<size_t>(from) * words_, t = static_cast<size_t>(to) * words_;
  const size_t start = words_ > 1 ? rng_() % words_ : 0;
  int best = -1;
  uint32_t best_avail = std::numeric_limits<uint32_t>::max();
  for (size_t k = 0; k < words_; ++k) {
    const size_t w = (start + k) % words_;
    for (uint64_t bits = have_[f + w] & ~have_[t + w] & ~pending_[t + w]; bits != 0;
         bits &= bits - 1) {
      const int c = static_cast<int>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
      if (withholds && Withheld(from, to, c)) continue;
      const uint32_t a = Avail(to, c);
      if (a < best_avail) {
        best = c;
        best_avail = a;
        if (a <= 1) return best;  // only `from` has it: none is rarer
      }
    }
  }
  return best;
}

void PieceSwarm::Send(int from, int to, int chunk, double now) {
  Node& a = nodes_[static_cast<size_t>(from)];
  Node& b = nodes_[static_cast<size_t>(to)];
  ++a.up_used;
  a.up_to.push_back(to);
  ++b.down_used;
  pending_[Word(to, chunk)] |= 1ull << (chunk % 64);
  const bool hand_on =
      std::find(b.deadlines.begin(), b.deadlines.end(), chunk) != b.deadlines.end();
  net_.Start({from, to, chunk, static_cast<double>(options_.piece_bytes),
              hand_on ? options_.hand_on_weight : 1.0},
             now);
}

void PieceSwarm::FillUploads(int node, double now) {
  Node& a = nodes_[static_cast<size_t>(node)];
  if (!a.joined || a.dead || a.have == 0) return;
  FillHandOns(node, now);
  while (a.up_used < options_.upload_slots && !a.peers.empty()) {
    const size_t n = a.peers.size(), start = rng_() % n;
    bool sent = false;
    for (size_t k = 0; k < n && !sent; ++k) {
      const int b = a.peers[(start + k) % n];
      if (!CanReceive(b) || std::find(a.up_to.begin(), a.up_to.end(), b) != a.up_to.end()) continue;
      const int c = Pick(node, b);
      if (c < 0) continue;
      Send(node, b, c, now);
      sent = true;
    }
    if (!sent) return;
  }
}

void PieceSwarm::FillHandOns(int owner, double now) {
  if (options_.hand_on_owner == HandOnOwner::kNone) return;
  Node& a = nodes_[static_cast<size_t>(owner)];
  for (size_t i = 0; i < a.handing.size(); ++i) {
    const int c = a.handing[i];
    for (int r : hand_on_[static_cast<size_t>(c)].receivers) {
      if (!Wants(owner, r, c)) continue;
      if (Unchoked(owner, r) || a.up_used < options_.upload_slots) Send(owner, r, c, now);
    }
  }
}

void PieceSwarm::FillDeadlines(int node, double now) {
  Node& b = nodes_[static_cast<size_t>(node)];
  if (!b.joined || b.dead) return;
  for (size_t i = 0; i < b.deadlines.size(); ++i) {
    const int c = b.deadlines[i];
    if (Bit(pending_, node, c) || b.peers.empty()) continue;
    const size_t n = b.peers.size(), start = rng_() % n;
    for (size_t k = 0; k < n; ++k) {
      const int from = b.peers[(start + k) % n];
      const Node& a = nodes_[static_cast<size_t>(from)];
      if (a.dead || !Has(from, c)) continue;
      // A peer uploading to it already serves the request at once; another
      // needs a free upload slot.
      if (!Unchoked(from, node) && (a.up_used >= options_.upload_slots || Reserved(from, node)))
        continue;
      Send(from, node, c, now);
      break;
    }
  }
}

void PieceSwarm::FillDownloads(int node, double now) {
  Node& b = nodes_[static_cast<size_t>(node)];
  while (CanReceive(node) && !b.peers.empty()) {
    const size_t n = b.peers.size(), start = rng_() % n;
    bool got = false;
    for (size_t k = 0; k < n && !got; ++k) {
      const int from = b.peers[(start + k) % n];
      const Node& a = nodes_[static_cast<size_t>(from)];
      if (a.dead || a.have == 0 || a.up_used >= options_.upload_slots ||
          std::find(a.up_to.begin(), a.up_to.end(), node) != a.up_to.end() || Reserved(from, node))
        continue;
      const int c = Pick(from, node);
      if (c < 0) continue;
      Send(from, node, c, now);
      got = true;
    }
    if (!got) return;
  }
}

void PieceSwarm::StartTransfers(double now) {
  while (!dirty_.empty()) {
    std::vector<int> batch;
    batch.swap(dirty_);
    for (int node : batch) {
      nodes_[static_cast<size_t>(node)].dirty = false;
      FillUploads(node, now);
      FillDeadlines(node, now);
      FillDownloads(node, now);
    }
  }
}

}  // namespace shoal::sim
