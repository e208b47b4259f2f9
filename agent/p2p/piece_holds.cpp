#include "p2p/piece_holds.h"

#include <algorithm>

#include "libtorrent/bdecode.hpp"
#include "libtorrent/extensions.hpp"
#include "libtorrent/peer_connection_handle.hpp"
#include "libtorrent/peer_request.hpp"
#include "libtorrent/torrent_handle.hpp"

namespace lt = libtorrent;

namespace shoal {

void PieceHolds::Hold(const FileTorrentId& id, uint32_t piece,
                      std::vector<std::pair<std::string, uint16_t>> receivers,
                      Clock::time_point until) {
  std::lock_guard<std::mutex> lock(mu_);
  // Forget holds that ended, so the map holds only what is held now.
  const Clock::time_point now = Clock::now();
  for (auto it = held_.begin(); it != held_.end();) {
    it = it->second.until <= now ? held_.erase(it) : std::next(it);
  }
  held_[{id, piece}] = Held{std::move(receivers), until};
  held_count_ = held_.size();
  holds++;
}

bool PieceHolds::IsReceiver(const Held& h, const std::string& ip, uint16_t port) {
  for (const auto& r : h.receivers) {
    if (r.first == ip && (port == 0 || r.second == port)) return true;
  }
  return false;
}

bool PieceHolds::Withheld(const FileTorrentId& id, int64_t piece, const std::string& ip,
                          uint16_t port, Clock::time_point now) {
  if (held_count_ == 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find({id, piece});
  if (it == held_.end()) return false;
  if (it->second.until <= now) {
    held_.erase(it);
    held_count_ = held_.size();
    return false;
  }
  return !IsReceiver(it->second, ip, port);
}

void PieceHolds::Had(const FileTorrentId& id, int64_t piece, const std::string& ip, uint16_t port) {
  if (held_count_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find({id, piece});
  if (it == held_.end() || !IsReceiver(it->second, ip, port)) return;
  held_.erase(it);
  held_count_ = held_.size();
  handed++;
}

namespace {

// BEP 6 reject_request: length 13, id 16, index, begin, length.
void SendReject(lt::peer_connection_handle& pc, const lt::peer_request& r) {
  char msg[17];
  auto put = [&msg](int at, uint32_t v) {
    msg[at] = static_cast<char>(v >> 24);
    msg[at + 1] = static_cast<char>(v >> 16);
    msg[at + 2] = static_cast<char>(v >> 8);
    msg[at + 3] = static_cast<char>(v);
  };
  put(0, 13);
  msg[4] = 16;
  put(5, static_cast<uint32_t>(static_cast<int>(r.piece)));
  put(9, static_cast<uint32_t>(r.start));
  put(13, static_cast<uint32_t>(r.length));
  pc.send_buffer(msg, sizeof msg);
}

class PeerHold final : public lt::peer_plugin {
 public:
  PeerHold(lt::peer_connection_handle pc, FileTorrentId id, std::shared_ptr<PieceHolds> holds)
      : pc_(std::move(pc)), id_(id), holds_(std::move(holds)) {
    ip_ = pc_.remote().address().to_string();
    // The port an outgoing connection went to is the peer's listen port.
    if (pc_.is_outgoing()) port_ = pc_.remote().port();
  }

  lt::string_view type() const override { return "shoal_piece_hold"; }

  bool on_extension_handshake(lt::bdecode_node const& n) override {
    if (n.type() == lt::bdecode_node::dict_t && port_ == 0) {
      const int64_t p = n.dict_find_int_value("p", 0);
      if (p > 0 && p < 65536) port_ = static_cast<uint16_t>(p);
    }
    return true;  // false would remove this plugin from the connection
  }

  bool on_request(lt::peer_request const& r) override {
    if (!holds_->Withheld(id_, static_cast<int>(r.piece), ip_, port_, PieceHolds::Clock::now())) {
      return false;
    }
    if (kept_.size() < PieceHolds::kMaxKept) {
      kept_.push_back(r);
      holds_->kept++;
    } else {
      SendReject(pc_, r);
      holds_->rejected++;
    }
    return true;
  }

  bool on_cancel(lt::peer_request const& r) override {
    auto it = std::find(kept_.begin(), kept_.end(), r);
    if (it == kept_.end()) return false;
    kept_.erase(it);
    SendReject(pc_, r);  // the fast extension answers a cancel with a reject
    holds_->rejected++;
    return true;
  }

  bool on_have(lt::piece_index_t piece) override {
    holds_->Had(id_, static_cast<int>(piece), ip_, port_);
    return false;
  }

  // About once a second: refuse the requests whose hold has ended.
  void tick() override {
    if (kept_.empty() || pc_.is_disconnecting()) return;
    const auto now = PieceHolds::Clock::now();
    for (auto it = kept_.begin(); it != kept_.end();) {
      if (holds_->Withheld(id_, static_cast<int>(it->piece), ip_, port_, now)) {
        ++it;
        continue;
      }
      SendReject(pc_, *it);
      holds_->rejected++;
      it = kept_.erase(it);
    }
  }

 private:
  lt::peer_connection_handle pc_;
  const FileTorrentId id_;
  const std::shared_ptr<PieceHolds> holds_;
  std::string ip_;
  uint16_t port_ = 0;                   // the peer's listen port; 0 until known
  std::vector<lt::peer_request> kept_;  // requests for held pieces, unanswered
};

class TorrentHolds final : public lt::torrent_plugin {
 public:
  TorrentHolds(FileTorrentId id, std::shared_ptr<PieceHolds> holds)
      : id_(id), holds_(std::move(holds)) {}
  std::shared_ptr<lt::peer_plugin> new_connection(lt::peer_connection_handle const& pc) override {
    return std::make_shared<PeerHold>(pc, id_, holds_);
  }

 private:
  const FileTorrentId id_;
  const std::shared_ptr<PieceHolds> holds_;
};

class SessionHolds final : public lt::plugin {
 public:
  explicit SessionHolds(std::shared_ptr<PieceHolds> holds) : holds_(std::move(holds)) {}
  std::shared_ptr<lt::torrent_plugin> new_torrent(lt::torrent_handle const& h,
                                                  lt::client_data_t) override {
    // Every torrent here is v2: its ID is the v2 info-hash.
    const lt::info_hash_t ih = h.info_hashes();
    if (!ih.has_v2()) return nullptr;
    return std::make_shared<TorrentHolds>(
        FileTorrentId::FromBytes(reinterpret_cast<const uint8_t*>(ih.v2.data())), holds_);
  }

 private:
  const std::shared_ptr<PieceHolds> holds_;
};

}  // namespace

std::shared_ptr<lt::plugin> NewPieceHoldPlugin(std::shared_ptr<PieceHolds> holds) {
  return std::make_shared<SessionHolds>(std::move(holds));
}

}  // namespace shoal
