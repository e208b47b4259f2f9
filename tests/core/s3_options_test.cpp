// Where S3 settings come from, and how addressing shapes URLs. No network.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "shoal/http/http_types.h"
#include "shoal/s3_credentials.h"
#include "shoal/s3_origin.h"

using namespace shoal;

namespace {

// Clears the AWS variables for one test and restores them after.
class CleanAwsEnv {
 public:
  CleanAwsEnv() {
    for (const char* n : kNames) {
      const char* v = std::getenv(n);
      saved_.emplace_back(n, v ? std::optional<std::string>(v) : std::nullopt);
      ::unsetenv(n);
    }
  }
  ~CleanAwsEnv() {
    for (const auto& [n, v] : saved_) {
      if (v)
        ::setenv(n, v->c_str(), 1);
      else
        ::unsetenv(n);
    }
  }

 private:
  static constexpr const char* kNames[] = {"AWS_ACCESS_KEY_ID",
                                           "AWS_SECRET_ACCESS_KEY",
                                           "AWS_SESSION_TOKEN",
                                           "AWS_REGION",
                                           "AWS_DEFAULT_REGION",
                                           "AWS_PROFILE",
                                           "AWS_SHARED_CREDENTIALS_FILE",
                                           "AWS_CONFIG_FILE",
                                           "HOME"};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

std::string WriteTemp(const std::string& text) {
  char tmpl[] = "/tmp/shoal-aws-XXXXXX";
  int fd = ::mkstemp(tmpl);
  ::close(fd);
  std::ofstream(tmpl) << text;
  return tmpl;
}

}  // namespace

TEST_CASE("S3 credentials come from options, then env, then the credentials file", "[s3][creds]") {
  CleanAwsEnv clean;
  OriginOptions o;
  o.url = "s3://b";
  const std::string file = WriteTemp(
      "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n"
      "[other]\naws_access_key_id=OTHERKEY\naws_secret_access_key=othersecret\n"
      "aws_session_token=tok\n");
  o.credentials_file = file;
  auto c = ResolveCredentials(o);
  REQUIRE(c.ok());
  CHECK(c->access_key == "FILEKEY");
  CHECK(c->secret_key == "filesecret");

  ::setenv("AWS_PROFILE", "other", 1);
  c = ResolveCredentials(o);
  REQUIRE(c.ok());
  CHECK(c->access_key == "OTHERKEY");
  CHECK(c->session_token == "tok");

  ::setenv("AWS_ACCESS_KEY_ID", "ENVKEY", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "envsecret", 1);
  ::setenv("AWS_SESSION_TOKEN", "envtoken", 1);
  c = ResolveCredentials(o);
  REQUIRE(c.ok());
  CHECK(c->access_key == "ENVKEY");
  CHECK(c->session_token == "envtoken");

  o.access_key = "OPTKEY";
  o.secret_key = "optsecret";
  c = ResolveCredentials(o);
  REQUIRE(c.ok());
  CHECK(c->access_key == "OPTKEY");
  CHECK(c->session_token.empty());

  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  o.access_key.clear();
  o.secret_key.clear();
  CHECK(ResolveCredentials(o).status().code() == Status::Code::kInvalidArgument);
  std::remove(file.c_str());
}

TEST_CASE("missing S3 credentials name every place looked at", "[s3][creds]") {
  CleanAwsEnv clean;
  OriginOptions o;
  o.url = "s3://b";
  o.credentials_file = "/nonexistent/credentials";
  Status s = ResolveCredentials(o).status();
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK(s.message().find("AWS_ACCESS_KEY_ID") != std::string::npos);
  CHECK(s.message().find("/nonexistent/credentials") != std::string::npos);
  CHECK_FALSE(OpenOrigin([&] {
                o.url = "s3://b/p";
                return o;
              }())
                  .ok());
}

TEST_CASE("the S3 region comes from options, env, then the config file", "[s3][creds]") {
  CleanAwsEnv clean;
  OriginOptions o;
  o.config_file = WriteTemp("[default]\nregion = eu-north-1\n[profile p]\nregion = ap-south-1\n");
  CHECK(ResolveRegion(o) == "eu-north-1");
  o.profile = "p";
  CHECK(ResolveRegion(o) == "ap-south-1");
  ::setenv("AWS_DEFAULT_REGION", "us-west-1", 1);
  CHECK(ResolveRegion(o) == "us-west-1");
  ::setenv("AWS_REGION", "us-west-2", 1);
  CHECK(ResolveRegion(o) == "us-west-2");
  o.region = "sa-east-1";
  CHECK(ResolveRegion(o) == "sa-east-1");
  std::remove(o.config_file.c_str());
  OriginOptions none;
  none.config_file = "/nonexistent";
  ::unsetenv("AWS_REGION");
  ::unsetenv("AWS_DEFAULT_REGION");
  CHECK(ResolveRegion(none) == "us-east-1");
}

TEST_CASE("endpoints parse into scheme, host and port", "[s3]") {
  auto e = ParseHttpEndpoint("http://127.0.0.1:7480/");
  REQUIRE(e.ok());
  CHECK_FALSE(e->tls);
  CHECK(e->host == "127.0.0.1");
  CHECK(e->port == 7480);
  CHECK(e->HostHeader() == "127.0.0.1:7480");
  e = ParseHttpEndpoint("https://s3.eu-west-1.amazonaws.com");
  REQUIRE(e.ok());
  CHECK(e->port == 443);
  CHECK(e->HostHeader() == "s3.eu-west-1.amazonaws.com");
  e = ParseHttpEndpoint("http://[::1]:9000");
  REQUIRE(e.ok());
  CHECK(e->host == "::1");
  CHECK(e->HostHeader() == "[::1]:9000");
  for (const char* bad :
       {"ftp://x", "http://", "http://h:0", "http://h:99999", "http://h/path", "http://h:12ab"}) {
    INFO(bad);
    CHECK_FALSE(ParseHttpEndpoint(bad).ok());
  }
}

TEST_CASE("addressing style decides where the bucket goes in presigned URLs", "[s3]") {
  OriginOptions o;
  o.url = "s3://my-bucket/models";
  o.endpoint = "http://localhost:9000";
  o.access_key = "AKID";
  o.secret_key = "secret";
  o.region = "us-east-1";
  auto path_style = NewS3Origin(o);
  REQUIRE(path_style.ok());
  auto url = (*path_style)->PresignGet("a b/c+d", 60);
  REQUIRE(url.ok());
  CHECK(url->rfind("http://localhost:9000/my-bucket/models/a%20b/c%2Bd?X-Amz-Algorithm=", 0) == 0);
  CHECK(url->find("X-Amz-Expires=60&") != std::string::npos);

  o.addressing = AddressingStyle::kVirtualHost;
  auto vhost = NewS3Origin(o);
  REQUIRE(vhost.ok());
  url = (*vhost)->PresignGet("k", 60);
  REQUIRE(url.ok());
  CHECK(url->rfind("http://my-bucket.localhost:9000/models/k?", 0) == 0);
  CHECK_FALSE((*vhost)->PresignGet("k", 0).ok());
  CHECK_FALSE((*vhost)->PresignGet("k", 8 * 24 * 3600).ok());

  o.url = "s3://Not_DNS.bucket/x";
  CHECK_FALSE(NewS3Origin(o).ok());
  o.addressing = AddressingStyle::kAuto;  // explicit endpoint: path style
  CHECK(NewS3Origin(o).ok());
}
