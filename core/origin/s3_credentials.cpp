#include "shoal/s3_credentials.h"

#include <cstdlib>
#include <fstream>
#include <map>

namespace shoal {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string HomeFile(const char* rel) {
  std::string home = Env("HOME");
  return home.empty() ? std::string() : home + "/" + rel;
}

// Reads `section` of an INI file into key/value pairs; empty if absent.
std::map<std::string, std::string> ReadIniSection(const std::string& path,
                                                  const std::string& section) {
  std::map<std::string, std::string> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      inside = Trim(line.substr(1, line.size() - 2)) == section;
      continue;
    }
    if (!inside) continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    out[Trim(line.substr(0, eq))] = Trim(line.substr(eq + 1));
  }
  return out;
}

std::string Profile(const OriginOptions& o) {
  if (!o.profile.empty()) return o.profile;
  std::string p = Env("AWS_PROFILE");
  return p.empty() ? "default" : p;
}

std::string CredentialsFile(const OriginOptions& o) {
  if (!o.credentials_file.empty()) return o.credentials_file;
  std::string f = Env("AWS_SHARED_CREDENTIALS_FILE");
  return f.empty() ? HomeFile(".aws/credentials") : f;
}

std::string ConfigFile(const OriginOptions& o) {
  if (!o.config_file.empty()) return o.config_file;
  std::string f = Env("AWS_CONFIG_FILE");
  return f.empty() ? HomeFile(".aws/config") : f;
}

}  // namespace

Result<S3Credentials> ResolveCredentials(const OriginOptions& options) {
  if (!options.access_key.empty() || !options.secret_key.empty()) {
    if (options.access_key.empty() || options.secret_key.empty()) {
      return Status::InvalidArgument("S3 credentials: give both an access key and a secret key");
    }
    return S3Credentials{options.access_key, options.secret_key, options.session_token};
  }
  std::string id = Env("AWS_ACCESS_KEY_ID"), secret = Env("AWS_SECRET_ACCESS_KEY");
  if (!id.empty() || !secret.empty()) {
    if (id.empty() || secret.empty()) {
      return Status::InvalidArgument(
          "S3 credentials: set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither");
    }
    return S3Credentials{id, secret, Env("AWS_SESSION_TOKEN")};
  }
  const std::string file = CredentialsFile(options), profile = Profile(options);
  auto section = ReadIniSection(file, profile);
  if (section.count("aws_access_key_id") && section.count("aws_secret_access_key")) {
    return S3Credentials{section["aws_access_key_id"], section["aws_secret_access_key"],
                         section.count("aws_session_token") ? section["aws_session_token"] : ""};
  }
  return Status::InvalidArgument(
      "no S3 credentials: pass an access key and secret, set AWS_ACCESS_KEY_ID and "
      "AWS_SECRET_ACCESS_KEY, or add profile [" +
      profile + "] to " + (file.empty() ? std::string("~/.aws/credentials") : file));
}

std::string ResolveRegion(const OriginOptions& options) {
  if (!options.region.empty()) return options.region;
  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    std::string r = Env(name);
    if (!r.empty()) return r;
  }
  const std::string profile = Profile(options);
  auto section =
      ReadIniSection(ConfigFile(options), profile == "default" ? profile : "profile " + profile);
  if (section.count("region") && !section["region"].empty()) return section["region"];
  return "us-east-1";
}

}  // namespace shoal
