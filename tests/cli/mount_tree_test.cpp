// MountTree: a version's paths as the folders and files FUSE looks up.
#include "cli/mount_tree.h"

#include <catch2/catch.hpp>

using shoal::MountNode;
using shoal::MountTree;

TEST_CASE("mount tree makes every folder on the way to each file", "[cli][mount]") {
  auto tree = MountTree::Build({"config.json", "tokenizer/vocab.txt", "a/b/c.bin"}, {"empty/x"});
  REQUIRE(tree.ok());
  const uint64_t config = tree->Lookup(MountTree::kRoot, "config.json");
  REQUIRE(config != 0);
  CHECK(!tree->Get(config)->dir);
  CHECK(tree->Get(config)->file == 0);

  const uint64_t a = tree->Lookup(MountTree::kRoot, "a");
  const uint64_t b = tree->Lookup(a, "b");
  const uint64_t c = tree->Lookup(b, "c.bin");
  REQUIRE(c != 0);
  CHECK(tree->Get(a)->dir);
  CHECK(tree->Get(c)->file == 2);
  CHECK(tree->Get(c)->parent == b);
  CHECK(tree->Get(b)->parent == a);

  const uint64_t x = tree->Lookup(tree->Lookup(MountTree::kRoot, "empty"), "x");
  REQUIRE(x != 0);
  CHECK(tree->Get(x)->dir);
  CHECK(tree->Get(x)->children.empty());

  CHECK(tree->Get(MountTree::kRoot)->children.size() == 4);  // a, config.json, empty, tokenizer
  CHECK(tree->Lookup(MountTree::kRoot, "missing") == 0);
  CHECK(tree->Lookup(config, "anything") == 0);  // a file has no children
  CHECK(tree->Get(0) == nullptr);
  CHECK(tree->Get(tree->size() + 1) == nullptr);
}

TEST_CASE("mount tree refuses a path that is both a file and a folder", "[cli][mount]") {
  CHECK(!MountTree::Build({"a", "a/b"}, {}).ok());
  CHECK(!MountTree::Build({"a/b", "a"}, {}).ok());
  CHECK(!MountTree::Build({"a"}, {"a"}).ok());
}
