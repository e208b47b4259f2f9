#include "proto/rpc_tls.h"

#include <kj/compat/tls.h>

#include "proto/kj_status.h"

namespace shoal {
namespace {

// Turns a failed client handshake into one line that says what to check.
kj::Exception HandshakeFailure(const TrackerEndpoint& endpoint, const kj::Exception& e) {
  std::string what = e.getDescription().cStr();
  std::string line = "tracker " + endpoint.address + ": TLS handshake failed: ";
  if (what.find("hostname mismatch") != std::string::npos) {
    line += "its certificate does not name '" + endpoint.ExpectedName() +
            "'; pass --tracker-server-name with a DNS name the certificate carries";
  } else if (what.find("not trusted") != std::string::npos) {
    line += "its certificate is not signed by a CA in " + endpoint.ca_file + " (" + what + ")";
  } else if (e.getType() == kj::Exception::Type::DISCONNECTED) {
    line += "the connection closed during the handshake; is it serving TLS? (" + what + ")";
  } else {
    line += what + "; is the tracker serving TLS on this port?";
  }
  return ExceptionFromStatus(Status::Unavailable(line));
}

}  // namespace

kj::Promise<kj::Own<kj::AsyncIoStream>> DialTracker(kj::AsyncIoProvider& io,
                                                    const TrackerEndpoint& endpoint) {
  auto connected =
      io.getNetwork().parseAddress(endpoint.address).then([](kj::Own<kj::NetworkAddress> addr) {
        return addr->connect().attach(kj::mv(addr));
      });
  if (!endpoint.tls()) return connected;
  // Read on every dial, so a rotated CA file is picked up by the next one.
  Result<std::string> ca = LoadTlsCaPem(endpoint.ca_file);
  if (!ca.ok())
    return ExceptionFromStatus(Status::IOError("--tracker-ca: " + ca.status().message()));
  return connected.then([endpoint, ca_pem = std::move(ca).value()](kj::Own<kj::AsyncIoStream> raw)
                            -> kj::Promise<kj::Own<kj::AsyncIoStream>> {
    auto trusted = kj::heap<kj::TlsCertificate>(kj::StringPtr(ca_pem.c_str()));
    kj::TlsContext::Options options;
    options.useSystemTrustStore = false;
    options.trustedCertificates = kj::arrayPtr(trusted.get(), 1);
    auto context = kj::heap<kj::TlsContext>(kj::mv(options));
    std::string name = endpoint.ExpectedName();
    auto wrapped = context->wrapClient(kj::mv(raw), kj::StringPtr(name.c_str()));
    return wrapped
        .then([](kj::Own<kj::AsyncIoStream> tls) { return tls; },
              [endpoint](kj::Exception&& e) -> kj::Own<kj::AsyncIoStream> {
                kj::throwFatalException(HandshakeFailure(endpoint, e));
              })
        .then([context = kj::mv(context),
               trusted = kj::mv(trusted)](kj::Own<kj::AsyncIoStream> tls) mutable {
          // The context and its trust outlive the connection that uses them.
          return tls.attach(kj::mv(context), kj::mv(trusted));
        });
  });
}

Result<std::unique_ptr<RpcTlsServer>> RpcTlsServer::Create(const TlsServerPem& pem) {
  std::unique_ptr<kj::TlsContext> context;
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                 kj::TlsKeypair keypair{kj::TlsPrivateKey(kj::StringPtr(pem.key.c_str())),
                                        kj::TlsCertificate(kj::StringPtr(pem.cert_chain.c_str()))};
                 kj::TlsContext::Options options;
                 options.useSystemTrustStore = false;
                 options.defaultKeypair = keypair;
                 context = std::make_unique<kj::TlsContext>(kj::mv(options));
               })) {
    return Status::InvalidArgument(std::string("TLS certificate or key refused: ") +
                                   e->getDescription().cStr());
  }
  return std::unique_ptr<RpcTlsServer>(new RpcTlsServer(std::move(context)));
}

RpcTlsServer::RpcTlsServer(std::unique_ptr<kj::TlsContext> context)
    : context_(std::move(context)) {}
RpcTlsServer::~RpcTlsServer() = default;

kj::Promise<kj::Own<kj::AsyncIoStream>> RpcTlsServer::Accept(kj::Own<kj::AsyncIoStream> stream) {
  return context_->wrapServer(kj::mv(stream));
}

}  // namespace shoal
