// TlsClientContext (declared in http_connection.h): the asio::ssl::context
// every TLS connection of one origin shares.
#include <boost/asio/ssl/context.hpp>

#include "shoal/http/http_connection.h"

namespace shoal {

struct TlsClientContext::Impl {
  boost::asio::ssl::context ctx{boost::asio::ssl::context::tls_client};
};

Result<std::shared_ptr<TlsClientContext>> TlsClientContext::Make(bool verify,
                                                                 const std::string& ca_file) {
  std::shared_ptr<TlsClientContext> out(new TlsClientContext());
  out->impl_ = std::make_unique<Impl>();
  out->verify_ = verify;
  auto& ctx = out->impl_->ctx;
  ctx.set_options(boost::asio::ssl::context::default_workarounds |
                  boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                  boost::asio::ssl::context::no_tlsv1 | boost::asio::ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  if (!verify) {
    ctx.set_verify_mode(boost::asio::ssl::verify_none, ec);
    return out;
  }
  ctx.set_verify_mode(boost::asio::ssl::verify_peer, ec);
  if (!ca_file.empty()) {
    ctx.load_verify_file(ca_file, ec);
    if (ec) {
      return Status::InvalidArgument("cannot load CA file " + ca_file + ": " + ec.message());
    }
  } else {
    ctx.set_default_verify_paths(ec);
    if (ec) return Status::IOError("cannot load the system's CA store: " + ec.message());
  }
  return out;
}

TlsClientContext::~TlsClientContext() = default;

void* TlsClientContext::native() const { return &impl_->ctx; }

}  // namespace shoal
