// TLS for the tracker's Cap'n Proto RPC, on kj-tls.
//
// The tracker wraps each accepted connection with an RpcTlsServer; agents
// and the CLI reach it through DialTracker, which speaks TLS when their
// TrackerEndpoint names a CA file and then trusts only that CA:
//
//   TrackerEndpoint tracker{"tracker.shoal.svc:7400", "/etc/shoal/ca.crt"};
//   kj::Own<kj::AsyncIoStream> stream = DialTracker(*io.provider, tracker).wait(io.waitScope);
//
// Certificates are checked by DNS name (kj-tls does not match IP addresses):
// a tracker given by IP needs a server_name its certificate carries.
#ifndef SHOAL_PROTO_RPC_TLS_H_
#define SHOAL_PROTO_RPC_TLS_H_

#include <kj/async-io.h>

#include <memory>
#include <string>

#include "shoal/status.h"
#include "shoal/tls_files.h"
#include "shoal/tracker_endpoint.h"

namespace kj {
class TlsContext;
}

namespace shoal {

// Connects to `endpoint` and, with TLS, completes the handshake and verifies
// the tracker's certificate. Breaks with a one-line reason (an untrusted or
// misnamed certificate, a tracker that does not speak TLS) that names the
// address and the flag to check. The stream owns its TLS state.
kj::Promise<kj::Own<kj::AsyncIoStream>> DialTracker(kj::AsyncIoProvider& io,
                                                    const TrackerEndpoint& endpoint);

// The server side: one certificate and key for every connection.
// Thread-safety: used on one kj event loop.
class RpcTlsServer {
 public:
  // InvalidArgument if kj-tls refuses the PEM.
  static Result<std::unique_ptr<RpcTlsServer>> Create(const TlsServerPem& pem);
  ~RpcTlsServer();
  RpcTlsServer(const RpcTlsServer&) = delete;
  RpcTlsServer& operator=(const RpcTlsServer&) = delete;

  // Completes the server side of the handshake on `stream`. The caller
  // bounds how long it may take.
  kj::Promise<kj::Own<kj::AsyncIoStream>> Accept(kj::Own<kj::AsyncIoStream> stream);

 private:
  explicit RpcTlsServer(std::unique_ptr<kj::TlsContext> context);
  std::unique_ptr<kj::TlsContext> context_;
};

}  // namespace shoal

#endif  // SHOAL_PROTO_RPC_TLS_H_
