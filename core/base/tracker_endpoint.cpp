#include "shoal/tracker_endpoint.h"

#include "shoal/host_port.h"

namespace shoal {

std::string TrackerEndpoint::ExpectedName() const {
  if (!server_name.empty()) return server_name;
  const std::string first = Addresses().empty() ? address : Addresses().front();
  std::string host;
  uint16_t port = 0;
  if (!SplitHostPort(first, &host, &port).ok()) return first;
  return host;
}

std::vector<std::string> TrackerEndpoint::Addresses() const {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= address.size()) {
    size_t comma = address.find(',', start);
    std::string one =
        address.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!one.empty()) out.push_back(one);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace shoal
