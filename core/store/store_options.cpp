#include "shoal/store_options.h"

namespace shoal {

Status StoreOptions::Validate() const {
  if (dir.empty()) {
    return Status::InvalidArgument("cache folder is empty; set --cache-dir to a folder for chunks");
  }
  if (capacity_bytes == 0) {
    return Status::InvalidArgument("cache capacity is 0 bytes; set --cache-size, e.g. 100GiB");
  }
  if (!(low_watermark > 0.0 && low_watermark <= high_watermark && high_watermark <= 1.0)) {
    return Status::InvalidArgument("cache watermarks must satisfy 0 < low <= high <= 1, got low " +
                                   std::to_string(low_watermark) + " and high " +
                                   std::to_string(high_watermark));
  }
  if (access_flush_batch == 0) {
    return Status::InvalidArgument("access_flush_batch must be at least 1");
  }
  if (index_cache_bytes < (64u << 10)) {
    return Status::InvalidArgument("index_cache_bytes must be at least 64 KiB, got " +
                                   std::to_string(index_cache_bytes));
  }
  return Status::OK();
}

}  // namespace shoal
