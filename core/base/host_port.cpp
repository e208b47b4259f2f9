#include "shoal/host_port.h"

#include "shoal/decimal.h"

namespace shoal {

Status SplitHostPort(const std::string& text, std::string* host, uint16_t* port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    return Status::InvalidArgument("address '" + text + "' must be host:port");
  }
  *host = text.substr(0, colon);
  if (host->size() > 1 && host->front() == '[' && host->back() == ']')
    *host = host->substr(1, host->size() - 2);
  Result<uint64_t> p = ParseDecimal(std::string_view(text).substr(colon + 1), 0, 65535);
  if (!p.ok()) return p.status().WithContext("address '" + text + "' has a bad port");
  *port = static_cast<uint16_t>(*p);
  return Status::OK();
}

}  // namespace shoal
