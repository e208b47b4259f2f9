// A real shoal-tracker process for integration tests: started on free
// loopback ports with its own data folder, killable and restartable. One of
// a fleet also gets a secrets folder the fleet shares (--secrets-dir).
#ifndef SHOAL_TESTS_SUPPORT_TRACKER_PROCESS_H_
#define SHOAL_TESTS_SUPPORT_TRACKER_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace shoal::testing {

class TrackerProcess {
 public:
  // `args` are extra flags for `serve` (--origin and S3 flags at least).
  // `secrets_dir` "" keeps the secrets in `data_dir`; otherwise the tracker
  // gets --secrets-dir and tokens are minted from there.
  TrackerProcess(std::string data_dir, std::vector<std::string> args, std::string secrets_dir = "");
  ~TrackerProcess();  // SIGTERM, then waits
  TrackerProcess(const TrackerProcess&) = delete;
  TrackerProcess& operator=(const TrackerProcess&) = delete;

  // Starts the process and waits (up to 15 s) until it listens; the first
  // start picks free ports, later ones reuse them. Throws on failure.
  void Start();
  // SIGKILL, as a crash would, and reaps it.
  void Kill();
  // SIGTERM, and reaps it.
  void Stop();
  // SIGKILL, deletes the data folder (not the secrets folder), and starts
  // again with the same flags and ports: a tracker that lost its disk.
  void RestartWiped();
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  std::string rpc_address() const { return "127.0.0.1:" + std::to_string(rpc_port_); }
  int http_port() const { return http_port_; }
  const std::string& data_dir() const { return data_dir_; }
  // Where the token secret, signing key and peer CA live.
  const std::string& secrets_dir() const { return secrets_dir_.empty() ? data_dir_ : secrets_dir_; }
  // The cluster's peer CA (PEM) once started; empty with --peer-tls off.
  std::string peer_ca() const;
  std::string log() const;
  // A counter or gauge from /metrics (0 if absent).
  double Metric(const std::string& sample) const;
  // For a tracker started with --tls-cert: scrape over HTTPS, trusting `ca_file`.
  void set_https_ca(std::string ca_file) { https_ca_ = std::move(ca_file); }

  // Mints a token with `shoal-tracker token create`.
  std::string MintToken(const std::string& ns, const std::string& role, const std::string& subject,
                        const std::string& ttl = "1h") const;

 private:
  std::string data_dir_;
  std::vector<std::string> args_;
  std::string secrets_dir_;  // "": data_dir_
  pid_t pid_ = -1;
  int rpc_port_ = 0;
  int http_port_ = 0;
  std::string https_ca_;
};

// Path of a built binary, from the compile definitions of the test target.
std::string TrackerBinary();
std::string CliBinary();

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_SUPPORT_TRACKER_PROCESS_H_
