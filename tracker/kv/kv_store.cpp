#include "kv/kv_store.h"

namespace shoal::tracker {

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (end.empty()) return "";  // every key from prefix on
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

Status VisitPrefix(KvStore& kv, const std::string& prefix,
                   const std::function<bool(const KvPair&)>& fn, size_t page) {
  return VisitRange(kv, prefix, PrefixEnd(prefix), fn, page);
}

Status VisitRange(KvStore& kv, const std::string& first, const std::string& end,
                  const std::function<bool(const KvPair&)>& fn, size_t page) {
  std::string begin = first;
  for (;;) {
    auto batch = kv.Scan(begin, end, page, /*reverse=*/false);
    if (!batch.ok()) return batch.status();
    for (const KvPair& p : *batch) {
      if (!fn(p)) return Status::OK();
    }
    if (batch->size() < page) return Status::OK();
    begin = batch->back().key + '\0';  // the next key after the last one read
  }
}

}  // namespace shoal::tracker
