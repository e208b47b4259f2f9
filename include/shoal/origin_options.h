// OriginOptions: where the origin is and how to talk to it.
//
// One plain struct for both implementations; fields an implementation does
// not use are ignored. Empty strings mean "take it from the environment or
// the AWS config files", as documented per field.
#ifndef SHOAL_ORIGIN_OPTIONS_H_
#define SHOAL_ORIGIN_OPTIONS_H_

#include <cstdint>
#include <string>

#include "shoal/status.h"

namespace shoal {

enum class AddressingStyle : uint8_t {
  kAuto = 0,     // virtual-host for AWS endpoints, path for any explicit endpoint
  kPath,         // http://host/bucket/key
  kVirtualHost,  // http://bucket.host/key
};

struct OriginOptions {
  // file:///var/lib/shoal/origin  or  s3://bucket/optional/prefix
  std::string url;

  // --- S3 only -----------------------------------------------------------
  // Scheme, host and port, e.g. http://127.0.0.1:7480. Empty = AWS:
  // https://s3.<region>.amazonaws.com.
  std::string endpoint;
  // Signing region. Empty = AWS_REGION, then AWS_DEFAULT_REGION, then the
  // config file's `region`, then us-east-1.
  std::string region;
  // Credentials. When access_key is empty: AWS_ACCESS_KEY_ID,
  // AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, then the credentials file.
  std::string access_key;
  std::string secret_key;
  std::string session_token;
  // INI credentials file. Empty = AWS_SHARED_CREDENTIALS_FILE, then
  // ~/.aws/credentials.
  std::string credentials_file;
  // AWS config file, read for `region`. Empty = AWS_CONFIG_FILE, then ~/.aws/config.
  std::string config_file;
  // Profile in those files. Empty = AWS_PROFILE, then "default".
  std::string profile;
  AddressingStyle addressing = AddressingStyle::kAuto;

  bool verify_tls = true;  // verify the server's certificate and host name
  std::string ca_file;     // PEM bundle to trust; empty = the system's store

  uint32_t connect_timeout_ms = 5000;  // resolve + connect + TLS handshake
  uint32_t io_timeout_ms = 30000;      // longest wait for any progress on a request
  uint32_t max_attempts = 5;           // tries per idempotent request, first included
  uint32_t backoff_base_ms = 100;      // first retry waits up to this (full jitter)
  uint32_t backoff_max_ms = 5000;      // cap on any single wait
  uint32_t max_idle_connections = 64;  // keep-alive connections kept for reuse

  // A streaming put holds at most about multipart_threshold + 2 * upload_parallelism * part_size
  // bytes in memory (192 MiB with these defaults).
  uint64_t multipart_threshold = 64ull << 20;  // streaming puts above this use multipart (bytes)
  uint64_t part_size = 16ull << 20;            // multipart part size (bytes, >= 5 MiB)
  uint32_t upload_parallelism = 4;             // multipart parts in flight per put

  // Checks ranges and the URL's scheme. Credentials are resolved, and can
  // fail, when the origin is opened.
  Status Validate() const;
};

}  // namespace shoal

#endif  // SHOAL_ORIGIN_OPTIONS_H_
