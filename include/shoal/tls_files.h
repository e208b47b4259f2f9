// TLS material read from PEM files: a server's certificate chain and key,
// and the CA a client trusts. Shared by every TLS endpoint of Shoal's own
// control links (the tracker's RPC and HTTP, the agent's HTTPS reads).
//
//   Result<TlsServerPem> pem = LoadTlsServerPem("/etc/shoal/tls.crt", "/etc/shoal/tls.key");
//   Result<std::string> ca = LoadTlsCaPem("/etc/shoal/ca.crt");
//
// The files are checked when loaded, so a wrong path or a key that does not
// belong to the certificate is one clear error at startup, not a failed
// handshake later.
#ifndef SHOAL_TLS_FILES_H_
#define SHOAL_TLS_FILES_H_

#include <string>

#include "shoal/status.h"

namespace shoal {

// A server's identity, as PEM text.
struct TlsServerPem {
  std::string cert_chain;  // the leaf certificate first, then any intermediates
  std::string key;         // the leaf's private key, unencrypted
};

// Reads a certificate chain and its key. The key file is a secret: it must
// be readable by its owner only (see ReadSecretFile). InvalidArgument naming
// the file if either does not parse, or if the key does not match the leaf
// certificate; NotFound or PermissionDenied as for reading.
Result<TlsServerPem> LoadTlsServerPem(const std::string& cert_file, const std::string& key_file);

// Reads the CA certificates a client trusts: one or more PEM certificates.
// InvalidArgument naming the file if it holds none.
Result<std::string> LoadTlsCaPem(const std::string& ca_file);

}  // namespace shoal

#endif  // SHOAL_TLS_FILES_H_
