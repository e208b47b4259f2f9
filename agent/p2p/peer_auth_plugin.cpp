#include "p2p/peer_auth_plugin.h"

#include <cstring>
#include <iterator>

#include "libtorrent/bdecode.hpp"
#include "libtorrent/bencode.hpp"
#include "libtorrent/entry.hpp"
#include "libtorrent/error_code.hpp"
#include "libtorrent/extensions.hpp"
#include "libtorrent/operations.hpp"
#include "libtorrent/peer_connection_handle.hpp"
#include "libtorrent/peer_request.hpp"
#include "libtorrent/torrent_handle.hpp"
#include "p2p/peer_auth_proof.h"
#include "shoal/log.h"
#include "shoal/utc_time.h"

namespace lt = libtorrent;

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kExtName[] = "shoal_auth";
constexpr char kNonceKey[] = "shoal_nonce";
// Our id for the shoal_auth message; the peer names its own in its handshake.
constexpr int kAuthExtId = 40;
// A proof is a certificate and a signature, well under 4 KiB.
constexpr int kMaxProofBytes = 16 * 1024;
// Requests rejected (fast extension) before further ones are only swallowed,
// so that a client re-asking at once cannot keep us busy.
constexpr int kMaxRejects = 64;
constexpr char kMsgExtended = 20;
constexpr char kMsgRejectRequest = 16;

void PutU32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(v >> shift));
}

class PeerAuth final : public lt::peer_plugin {
 public:
  PeerAuth(lt::peer_connection_handle pc, std::shared_ptr<PeerAuthGate> gate,
           std::shared_ptr<const PeerAuthKeys> keys, std::string info_hash)
      : pc_(std::move(pc)),
        gate_(std::move(gate)),
        keys_(std::move(keys)),
        info_hash_(std::move(info_hash)),
        own_(NewPeerAuthNonce()),
        role_(pc_.is_outgoing() ? PeerAuthRole::kOpener : PeerAuthRole::kAcceptor) {}

  lt::string_view type() const override { return kExtName; }

  void add_handshake(lt::entry& h) override {
    h["m"][kExtName] = kAuthExtId;
    h[kNonceKey] = std::string(reinterpret_cast<const char*>(own_.data()), own_.size());
  }

  bool on_handshake(lt::span<char const> reserved) override {
    fast_ = reserved.size() >= 8 && (reserved[7] & 0x04) != 0;
    return true;
  }

  // Returns true even when refusing: false would only remove this plugin
  // from the connection, and with it the gate.
  bool on_extension_handshake(lt::bdecode_node const& h) override {
    if (done()) return true;
    lt::bdecode_node m = h.dict_find_dict("m");
    const int64_t id = m ? m.dict_find_int_value(kExtName, 0) : 0;
    const lt::string_view nonce = h.dict_find_string_value(kNonceKey);
    if (id <= 0 || id > 255 || nonce.size() != kPeerAuthNonceBytes) {
      Refuse(PeerAuthRefusal::kNoProof, "no shoal_auth or nonce in its extension handshake");
      return true;
    }
    std::memcpy(theirs_.data(), nonce.data(), theirs_.size());
    if (theirs_ == own_) {
      Refuse(PeerAuthRefusal::kMalformed, "it echoed our nonce");
      return true;
    }
    their_ext_id_ = static_cast<int>(id);
    SendProof();
    return true;
  }

  bool on_extended(int length, int msg, lt::span<char const> body) override {
    if (msg != kAuthExtId) return false;
    if (done()) return true;
    if (length > kMaxProofBytes) {
      Refuse(PeerAuthRefusal::kMalformed, "a proof of " + std::to_string(length) + " bytes");
      return true;
    }
    if (body.size() < length) return true;  // the rest is on its way
    CheckProof(body);
    return true;
  }

  bool on_request(lt::peer_request const& r) override {
    if (admitted_) return false;
    if (fast_ && rejects_ < kMaxRejects && !refused_) {
      ++rejects_;
      SendReject(r);
    }
    return true;
  }

  bool on_piece(lt::peer_request const&, lt::span<char const>) override { return !admitted_; }

  void tick() override {
    if (done()) return;
    const Clock::time_point now = Clock::now();
    if (pc_.is_connecting()) {
      started_ = now;  // an outgoing connection's clock starts once it connects
      return;
    }
    if (now - started_ > gate_->timeout()) {
      Refuse(PeerAuthRefusal::kTimeout, "no valid proof within the handshake timeout");
    }
  }

 private:
  bool done() const { return admitted_ || refused_; }

  void SendProof() {
    Result<std::string> sig = keys_->Sign(PeerAuthMessage(role_, theirs_, own_, info_hash_));
    if (!sig.ok()) {
      Log(LogLevel::kError, "p2p.peer.auth_sign_failed", {{"error", sig.status().ToString()}});
      pc_.disconnect(lt::errors::make_error_code(lt::errors::no_memory),
                     lt::operation_t::bittorrent);
      return;
    }
    lt::entry proof;
    proof["cert"] = keys_->cert_pem();
    proof["sig"] = *sig;
    std::string payload;
    lt::bencode(std::back_inserter(payload), proof);
    std::string frame;
    PutU32(frame, static_cast<uint32_t>(payload.size() + 2));
    frame.push_back(kMsgExtended);
    frame.push_back(static_cast<char>(their_ext_id_));
    frame += payload;
    pc_.send_buffer(frame.data(), static_cast<int>(frame.size()));
  }

  void CheckProof(lt::span<char const> body) {
    if (their_ext_id_ == 0) {
      Refuse(PeerAuthRefusal::kMalformed, "a proof before its extension handshake");
      return;
    }
    lt::error_code ec;
    lt::bdecode_node proof = lt::bdecode(body, ec);
    if (ec || proof.type() != lt::bdecode_node::dict_t) {
      Refuse(PeerAuthRefusal::kMalformed, "a proof that is not a bencoded dictionary");
      return;
    }
    const lt::string_view c = proof.dict_find_string_value("cert");
    const lt::string_view g = proof.dict_find_string_value("sig");
    const std::string_view cert(c.data(), c.size()), sig(g.data(), g.size());
    const PeerAuthRole theirs =
        role_ == PeerAuthRole::kOpener ? PeerAuthRole::kAcceptor : PeerAuthRole::kOpener;
    PeerAuthRefusal why_not = PeerAuthRefusal::kMalformed;
    std::string why;
    if (!VerifyPeerAuthProof(*keys_, cert, sig, PeerAuthMessage(theirs, own_, theirs_, info_hash_),
                             NowMs(), &why_not, &why)) {
      Refuse(why_not, why);
      return;
    }
    admitted_ = true;
    gate_->Admitted();
  }

  void SendReject(lt::peer_request const& r) {
    std::string frame;
    PutU32(frame, 13);
    frame.push_back(kMsgRejectRequest);
    PutU32(frame, static_cast<uint32_t>(static_cast<int>(r.piece)));
    PutU32(frame, static_cast<uint32_t>(r.start));
    PutU32(frame, static_cast<uint32_t>(r.length));
    pc_.send_buffer(frame.data(), static_cast<int>(frame.size()));
  }

  void Refuse(PeerAuthRefusal r, const std::string& why) {
    if (refused_) return;
    refused_ = true;
    gate_->Refused(r, pc_.remote().address().to_string(), why);
    pc_.disconnect(lt::error_code(EACCES, lt::generic_category()), lt::operation_t::bittorrent);
  }

  lt::peer_connection_handle pc_;
  const std::shared_ptr<PeerAuthGate> gate_;
  const std::shared_ptr<const PeerAuthKeys> keys_;  // as when the connection opened
  const std::string info_hash_;
  const PeerAuthNonce own_;
  const PeerAuthRole role_;
  PeerAuthNonce theirs_{};
  int their_ext_id_ = 0;  // 0 until its extension handshake
  bool fast_ = false;     // it offered the fast extension (reject messages)
  bool admitted_ = false;
  bool refused_ = false;
  int rejects_ = 0;
  Clock::time_point started_ = Clock::now();
};

class TorrentAuth final : public lt::torrent_plugin {
 public:
  TorrentAuth(std::shared_ptr<PeerAuthGate> gate, std::string info_hash)
      : gate_(std::move(gate)), info_hash_(std::move(info_hash)) {}
  std::shared_ptr<lt::peer_plugin> new_connection(lt::peer_connection_handle const& pc) override {
    std::shared_ptr<const PeerAuthKeys> keys = gate_->keys();
    if (!keys || pc.type() != lt::connection_type::bittorrent) return nullptr;
    return std::make_shared<PeerAuth>(pc, gate_, std::move(keys), info_hash_);
  }

 private:
  const std::shared_ptr<PeerAuthGate> gate_;
  const std::string info_hash_;
};

class SessionAuth final : public lt::plugin {
 public:
  explicit SessionAuth(std::shared_ptr<PeerAuthGate> gate) : gate_(std::move(gate)) {}
  std::shared_ptr<lt::torrent_plugin> new_torrent(lt::torrent_handle const& h,
                                                  lt::client_data_t) override {
    if (!gate_->keys()) return nullptr;  // tls or off: nothing to do
    // The full v2 info-hash (Shoal's torrents are v2), else the v1 one.
    const lt::info_hash_t ih = h.info_hashes();
    std::string hash = ih.has_v2() ? std::string(ih.v2.data(), ih.v2.size())
                                   : std::string(ih.v1.data(), ih.v1.size());
    return std::make_shared<TorrentAuth>(gate_, std::move(hash));
  }

 private:
  const std::shared_ptr<PeerAuthGate> gate_;
};

}  // namespace

std::shared_ptr<lt::plugin> NewPeerAuthPlugin(std::shared_ptr<PeerAuthGate> gate) {
  return std::make_shared<SessionAuth>(std::move(gate));
}

const char* PeerAuthRefusalName(PeerAuthRefusal r) {
  switch (r) {
    case PeerAuthRefusal::kNoProof:
      return "no_proof";
    case PeerAuthRefusal::kTimeout:
      return "timeout";
    case PeerAuthRefusal::kBadCertificate:
      return "bad_certificate";
    case PeerAuthRefusal::kBadSignature:
      return "bad_signature";
    case PeerAuthRefusal::kMalformed:
      break;
  }
  return "malformed";
}

Status PeerAuthGate::SetIdentity(const PeerIdentity& identity) {
  auto keys = PeerAuthKeys::FromIdentity(identity);
  if (!keys.ok()) return keys.status();
  std::lock_guard<std::mutex> l(mu_);
  keys_ = std::move(keys).value();
  return Status::OK();
}

std::shared_ptr<const PeerAuthKeys> PeerAuthGate::keys() const {
  std::lock_guard<std::mutex> l(mu_);
  return keys_;
}

void PeerAuthGate::Refused(PeerAuthRefusal r, const std::string& peer, const std::string& why) {
  const uint64_t n = refused_[static_cast<size_t>(r)].fetch_add(1, std::memory_order_relaxed);
  // One line per refusal would let a port scan flood the log.
  if (n % 100 == 0) {
    Log(LogLevel::kWarn, "p2p.peer.auth_refused",
        {{"peer", peer}, {"reason", PeerAuthRefusalName(r)}, {"error", why}, {"count", n + 1}});
  }
}

std::array<uint64_t, kPeerAuthRefusalCount> PeerAuthGate::refused() const {
  std::array<uint64_t, kPeerAuthRefusalCount> out{};
  for (size_t i = 0; i < out.size(); ++i) out[i] = refused_[i].load(std::memory_order_relaxed);
  return out;
}

}  // namespace shoal
