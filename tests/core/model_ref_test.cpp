#include "shoal/model_ref.h"

#include <catch2/catch.hpp>

using shoal::ModelRef;

TEST_CASE("model references parse into namespace, name and ref", "[model_ref]") {
  auto r = ModelRef::Parse("team-a/llama-ft:prod");
  REQUIRE(r.ok());
  CHECK(r->ns() == "team-a");
  CHECK(r->name() == "llama-ft");
  CHECK(r->ref() == "prod");
  CHECK(ModelRef::Parse("team-a/llama-ft")->ref() == "latest");
  CHECK(r->ToString() == "team-a/llama-ft:prod");
}

TEST_CASE("malformed model references are refused with the reason", "[model_ref]") {
  CHECK_THAT(ModelRef::Parse("llama").status().ToString(),
             Catch::Contains("is not namespace/model"));
  CHECK_THAT(ModelRef::Parse("a/b:").status().ToString(), Catch::Contains("empty tag"));
  CHECK_THAT(ModelRef::Parse("a//b:x").status().ToString(), Catch::Contains("model name"));
  CHECK_THAT(ModelRef::Parse("a/b/c:x").status().ToString(), Catch::Contains("model name"));
  CHECK_THAT(ModelRef::Parse("A/b").status().ToString(), Catch::Contains("namespace"));
  CHECK_THAT(ModelRef::Parse(std::string(5000, 'a') + "/b").status().ToString(),
             Catch::Contains("too long"));
  CHECK_THAT(ModelRef::Parse("a/b", true).status().ToString(), Catch::Contains("needs a :tag"));
}
