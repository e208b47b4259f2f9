// "host:port" listen and connect addresses, as flags spell them.
#ifndef SHOAL_HOST_PORT_H_
#define SHOAL_HOST_PORT_H_

#include <cstdint>
#include <string>

#include "shoal/status.h"

namespace shoal {

// Splits "127.0.0.1:7401", "0.0.0.0:0" or "[::1]:7401" into host and port
// (0 means any free port). InvalidArgument names the text on failure.
Status SplitHostPort(const std::string& text, std::string* host, uint16_t* port);

}  // namespace shoal

#endif  // SHOAL_HOST_PORT_H_
