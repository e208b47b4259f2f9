#include "store/chunk_table.h"

#include <cassert>

namespace shoal {

ChunkEntry* ChunkTable::Find(const ChunkId& id) {
  auto it = map_.find(id);
  return it == map_.end() ? nullptr : &it->second;
}

ChunkEntry* ChunkTable::Insert(const ChunkId& id, uint64_t size, int64_t last_access_ms, bool owned,
                               bool verified) {
  auto [it, inserted] = map_.try_emplace(id);
  assert(inserted);
  (void)inserted;
  ChunkEntry* e = &it->second;
  e->id = &it->first;
  e->size = size;
  e->last_access_ms = last_access_ms;
  e->generation = next_generation_++;
  e->owned = owned;
  e->verified = verified;
  Append(e);
  return e;
}

void ChunkTable::Erase(ChunkEntry* e) {
  if (e->pins == 0) Unlink(e);
  map_.erase(*e->id);
}

void ChunkTable::Pin(ChunkEntry* e) {
  if (e->pins++ == 0) Unlink(e);
}

void ChunkTable::Unpin(ChunkEntry* e) {
  assert(e->pins > 0);
  if (--e->pins == 0) Append(e);
}

void ChunkTable::Touch(ChunkEntry* e, int64_t now_ms) {
  e->last_access_ms = now_ms;
  if (e->pins == 0) {
    Unlink(e);
    Append(e);
  }
}

void ChunkTable::SetOwned(ChunkEntry* e, bool owned) {
  if (e->owned == owned) return;
  if (e->pins == 0) Unlink(e);
  e->owned = owned;
  if (e->pins == 0) Append(e);
}

ChunkEntry* ChunkTable::Victim() const {
  return unowned_.head != nullptr ? unowned_.head : owned_.head;
}

void ChunkTable::Append(ChunkEntry* e) {
  List& l = ListOf(e);
  e->prev = l.tail;
  e->next = nullptr;
  if (l.tail != nullptr) {
    l.tail->next = e;
  } else {
    l.head = e;
  }
  l.tail = e;
}

void ChunkTable::Unlink(ChunkEntry* e) {
  List& l = ListOf(e);
  if (e->prev != nullptr) {
    e->prev->next = e->next;
  } else {
    l.head = e->next;
  }
  if (e->next != nullptr) {
    e->next->prev = e->prev;
  } else {
    l.tail = e->prev;
  }
  e->prev = e->next = nullptr;
}

}  // namespace shoal
