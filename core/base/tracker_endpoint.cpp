#include "shoal/tracker_endpoint.h"

#include "shoal/host_port.h"

namespace shoal {

std::string TrackerEndpoint::ExpectedName() const {
  if (!server_name.empty()) return server_name;
  std::string host;
  uint16_t port = 0;
  if (!SplitHostPort(address, &host, &port).ok()) return address;
  return host;
}

}  // namespace shoal
