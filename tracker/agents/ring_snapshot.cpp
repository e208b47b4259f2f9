#include "agents/ring_snapshot.h"

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <algorithm>

#include "shoal/proto/tracker.capnp.h"

namespace shoal::tracker {

RingSnapshot RingSnapshots::Get(int64_t now_ms, bool fresh) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t epoch = agents_.epoch();
  const uint64_t behind = epoch >= last_.epoch ? epoch - last_.epoch : UINT64_MAX;
  if (!fresh && last_.message != nullptr && behind <= std::max<uint64_t>(64, last_.members / 8)) {
    return last_;
  }
  uint64_t at = 0;
  std::shared_ptr<const std::vector<RingMember>> all = agents_.RingMembers(now_ms, &at);
  capnp::MallocMessageBuilder message;
  auto members =
      message.initRoot<proto::RingSnapshot>().initMembers(static_cast<unsigned>(all->size()));
  for (size_t i = 0; i < all->size(); ++i) {
    members[static_cast<unsigned>(i)].setAgentId((*all)[i].id);
    members[static_cast<unsigned>(i)].setWeight((*all)[i].weight);
  }
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  auto bytes = words.asBytes();
  last_.epoch = at;
  last_.members = all->size();
  last_.message = std::make_shared<const std::string>(reinterpret_cast<const char*>(bytes.begin()),
                                                      bytes.size());
  return last_;
}

}  // namespace shoal::tracker
