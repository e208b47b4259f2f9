// The numeric query parameters of an announce (BEP 3), parsed strictly.
//
// Every number must be plain decimal digits within its range; anything
// else refuses the whole announce with one message naming the parameter,
// so a wrapped "-1" can never become a port.
#ifndef SHOAL_TRACKER_ANNOUNCE_NUMBERS_H_
#define SHOAL_TRACKER_ANNOUNCE_NUMBERS_H_

#include <cstdint>
#include <map>
#include <string>

#include "shoal/status.h"

namespace shoal::tracker {

struct AnnounceNumbers {
  uint16_t port = 0;        // required, 1 to 65535
  uint32_t numwant = 50;    // optional, 0 to 2^32-1 (the reply caps it)
  uint64_t left = 1;        // optional; bytes still wanted, 0 for a seeder
  uint64_t uploaded = 0;    // optional; bytes, for the peer's own accounting
  uint64_t downloaded = 0;  // optional
};

// Reads port, numwant, left, uploaded and downloaded from decoded query
// parameters. InvalidArgument "port: must be a whole number from 1 to
// 65535, not '...'" (or the like) on the first bad one.
Result<AnnounceNumbers> ParseAnnounceNumbers(const std::map<std::string, std::string>& query);

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_ANNOUNCE_NUMBERS_H_
