// Peer admission by certificate: the engine's identity, the listen socket
// that goes with it, and why connections were refused.
//
// Each SSL torrent has its own TLS context in libtorrent, which trusts only
// the CA in the torrent's info dictionary and checks that the other end's
// certificate names the torrent (Shoal's certificates name "*"). So the
// engine's certificate is given to every torrent as it is added, and again
// to every torrent when it is renewed; connections already open keep the
// certificate they started with.
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <chrono>
#include <memory>

#include "libtorrent/alert_types.hpp"
#include "libtorrent/error_code.hpp"
#include "p2p/engine_impl.h"
#include "shoal/log.h"
#include "shoal/openssl_ptr.h"

namespace shoal {
namespace {

// Diffie-Hellman parameters for the torrents' TLS contexts (RFC 7919's
// ffdhe2048 group, a fixed public group, so nothing is generated at
// random). libtorrent insists on some; the ECDHE suites are preferred.
std::string MakeDhParams() {
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_name(nullptr, "DH", nullptr));
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_paramgen_init(ctx.get()) <= 0 ||
      EVP_PKEY_CTX_set_group_name(ctx.get(), "ffdhe2048") <= 0 ||
      EVP_PKEY_paramgen(ctx.get(), &raw) <= 0) {
    return "";
  }
  PkeyPtr params(raw);
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_Parameters(bio.get(), params.get()) != 1) return "";
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

const std::string& DhParams() {
  static const std::string params = MakeDhParams();
  return params;
}

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

}  // namespace

const char* PeerRefusalName(PeerRefusal r) {
  switch (r) {
    case PeerRefusal::kNoCertificate:
      return "no_certificate";
    case PeerRefusal::kBadCertificate:
      return "bad_certificate";
    case PeerRefusal::kNotTls:
      return "not_tls";
    case PeerRefusal::kTooManyHandshakes:
      return "too_many_handshakes";
    case PeerRefusal::kEvicted:
      return "evicted";
    case PeerRefusal::kOtherTls:
    case PeerRefusal::kCount:
      break;
  }
  return "other_tls";
}

// OpenSSL's reason strings are the stable part of its errors; the numbers
// behind them differ between the two ends of a handshake.
PeerRefusal ClassifyRefusal(const lt::error_code& ec) {
  if (ec == lt::errors::invalid_ssl_cert) return PeerRefusal::kBadCertificate;
  // The codes the rebuilt libtorrent's hold_incoming_ssl() posts (patches
  // 03 and 04): a newcomer refused, or a held handshake closed for one.
  if (ec == lt::errors::too_many_connections) return PeerRefusal::kTooManyHandshakes;
  if (ec == lt::errors::optimistic_disconnect) return PeerRefusal::kEvicted;
  const std::string m = ec.message();
  if (Contains(m, "did not return a certificate") || Contains(m, "certificate required"))
    return PeerRefusal::kNoCertificate;
  if (Contains(m, "certificate") || Contains(m, "unknown ca") || Contains(m, "bad certificate"))
    return PeerRefusal::kBadCertificate;
  if (Contains(m, "wrong version number") || Contains(m, "http request") ||
      Contains(m, "unknown protocol") || Contains(m, "packet length too long"))
    return PeerRefusal::kNotTls;
  return PeerRefusal::kOtherTls;
}

void TorrentEngine::Impl::CountRefusal(const lt::error_code& ec, const lt::tcp::endpoint& from) {
  PeerRefusal r = ClassifyRefusal(ec);
  {
    std::lock_guard<std::mutex> l(mu_);
    ++refused_[static_cast<size_t>(r)];
  }
  // One line per refusal would let a port scan flood the log.
  if (refusals_seen_++ % 100 == 0) {
    Log(LogLevel::kWarn, "p2p.peer.refused",
        {{"peer", from.address().to_string()},
         {"reason", PeerRefusalName(r)},
         {"error", ec.message()},
         {"refusals", refusals_seen_}});
  }
}

void TorrentEngine::Impl::HandlePeerAlert(lt::alert* a) {
  if (auto* e = lt::alert_cast<lt::peer_error_alert>(a)) {
    if (e->op == lt::operation_t::ssl_handshake) CountRefusal(e->error, e->endpoint);
  } else if (auto* d = lt::alert_cast<lt::peer_disconnected_alert>(a)) {
    if (d->op == lt::operation_t::ssl_handshake || d->error == lt::errors::invalid_ssl_cert)
      CountRefusal(d->error, d->endpoint);
  }
}

Result<std::string> TorrentEngine::Impl::AwaitPeerCa() {
  std::unique_lock<std::mutex> l(mu_);
  bool known = identity_cv_.wait_for(l, std::chrono::milliseconds(options_.add_timeout_ms),
                                     [&] { return identity_known_ || stopped_; });
  if (stopped_) return Status::Unavailable("the peer-to-peer engine is stopped");
  if (!known) {
    return Status::Unavailable("no peer certificate after " +
                               std::to_string(options_.add_timeout_ms) +
                               " ms: the agent has not registered with the tracker yet");
  }
  return identity_.tls() ? identity_.ca_pem : std::string();  // auth torrents are plain
}

bool TorrentEngine::Impl::PeerTls() const {
  std::lock_guard<std::mutex> l(mu_);
  return identity_.tls();
}

void TorrentEngine::Impl::PresentCertificate(const lt::torrent_handle& h) {
  std::string cert, key;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!identity_.tls()) return;
    cert = identity_.cert_pem;
    key = identity_.key_pem;
  }
  lt::torrent_handle handle = h;  // its calls are not const
  Status s = CallLibtorrent("set certificate", [&] {
    handle.set_ssl_certificate_buffer(cert, key, DhParams());
    return Status::OK();
  });
  if (!s.ok()) Log(LogLevel::kWarn, "p2p.cert.set_failed", {{"error", s.ToString()}});
}

// Listens on the same ports, for TLS or plain BitTorrent.
Status TorrentEngine::Impl::ListenFor(bool tls) {
  const std::string host = options_.listen.substr(0, options_.listen.rfind(':'));
  for (auto& session : sessions_) {
    const uint16_t port = tls ? session->listen_port() : session->ssl_listen_port();
    const std::string listen = host + ":" + std::to_string(port) + (tls ? "s" : "");
    lt::settings_pack p;
    p.set_str(lt::settings_pack::listen_interfaces, listen);
    session->apply_settings(std::move(p));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((tls ? session->ssl_listen_port() : session->listen_port()) != port) {
      if (std::chrono::steady_clock::now() > deadline)
        return Status::Unavailable("cannot listen for peers on " + listen);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return Status::OK();
}

uint16_t TorrentEngine::Impl::ListenPort(size_t k) const {
  if (k >= sessions_.size()) return 0;
  const lt::session& s = *sessions_[k];
  return listen_tls_ ? s.ssl_listen_port() : s.listen_port();
}

Status TorrentEngine::SetPeerIdentity(const PeerIdentity& identity) {
  if (!identity.ca_pem.empty() && (identity.cert_pem.empty() || identity.key_pem.empty())) {
    return Status::InvalidArgument("a peer identity with a CA needs a certificate and its key");
  }
  // add_mu_ keeps other calls of this and every AddFile out until the
  // listen socket matches the identity and it is published.
  std::lock_guard<std::mutex> add(impl_->add_mu_);
  const bool tls = identity.tls();
  bool first, relisten;
  {
    std::lock_guard<std::mutex> l(impl_->mu_);
    if (impl_->stopped_) return Status::Unavailable("the peer-to-peer engine is stopped");
    first = !impl_->identity_known_;
    if (!first && (identity.ca_pem != impl_->identity_.ca_pem ||
                   identity.auth_only != impl_->identity_.auth_only)) {
      return Status::InvalidArgument(
          "the cluster's peer CA changed (or peer TLS was turned on or off): every torrent's "
          "info-hash changes with it, so restart the agent to follow");
    }
    relisten = first && tls != impl_->listen_tls_;
  }
  if (relisten) SHOAL_RETURN_IF_ERROR(impl_->ListenFor(tls));
  if (identity.auth()) SHOAL_RETURN_IF_ERROR(impl_->auth_gate_->SetIdentity(identity));
  std::vector<lt::torrent_handle> handles;
  {
    std::lock_guard<std::mutex> l(impl_->mu_);
    impl_->listen_tls_ = tls;
    impl_->identity_ = identity;
    impl_->identity_known_ = true;
    for (const auto& [id, t] : impl_->torrents_) handles.push_back(t->handle);
  }
  impl_->identity_cv_.notify_all();
  for (const lt::torrent_handle& h : handles) impl_->PresentCertificate(h);
  Log(LogLevel::kInfo, "p2p.identity",
      {{"peer_tls", tls},
       {"peer_auth", identity.auth()},
       {"not_after_ms", identity.not_after_ms},
       {"renewed", !first}});
  return Status::OK();
}

}  // namespace shoal
