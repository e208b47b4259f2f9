// TrackerEndpoint: where the tracker's RPC is, and how its clients (agents,
// the CLI) trust it. With a CA file they speak TLS and trust only that CA
// (see DialTracker in proto/rpc_tls.h).
#ifndef SHOAL_TRACKER_ENDPOINT_H_
#define SHOAL_TRACKER_ENDPOINT_H_

#include <string>

namespace shoal {

struct TrackerEndpoint {
  std::string address = "127.0.0.1:7400";  // "host:port"
  std::string ca_file;                     // if set: TLS, trusting only the CAs in this file
  // The DNS name the tracker's certificate must carry; default: the host of
  // `address`. Certificates are matched by name, so a tracker given by IP
  // address needs one.
  std::string server_name;

  bool tls() const { return !ca_file.empty(); }
  // server_name, or the host part of address.
  std::string ExpectedName() const;
};

}  // namespace shoal

#endif  // SHOAL_TRACKER_ENDPOINT_H_
