@0xa1e3c5d7f9b2a403;
# The agent's local control interface, served on a unix socket to the shoal
# CLI on the same node.

using Cxx = import "/capnp/c++.capnp";
using T = import "tracker.capnp";
$Cxx.namespace("shoal::proto");

struct PullState {
  totalBytes @0 :UInt64;          # the version's bytes
  haveBytes @1 :UInt64;           # already in the cache, or arrived
  bytesFromPeers @2 :UInt64;
  bytesFromOrigin @3 :UInt64;
  peers @4 :UInt32;               # connected peers across the version's torrents
  filesDone @5 :UInt32;
  filesTotal @6 :UInt32;
}

struct PullSummary {
  versionId @0 :Data;
  totalBytes @1 :UInt64;
  bytesFromPeers @2 :UInt64;
  bytesFromOrigin @3 :UInt64;
  bytesCached @4 :UInt64;         # already in the cache before the pull
  seconds @5 :Float64;
  fileCount @6 :UInt32;
  firstChunkSeconds @7 :Float64;  # when the first missing chunk arrived; -1 if none was missing
}

interface PullListener {
  progress @0 (state :PullState) -> ();
}

interface LocalAgent {
  # Pulls ns/name:ref with the caller's token (which must allow reading the
  # namespace) and materialises it at `dest`, an absolute path, atomically.
  pull @0 (ref :Text, token :Text, dest :Text, listener :PullListener) -> (summary :PullSummary);
  status @1 () -> (stats :T.AgentStats, agentId :Text, epoch :UInt64);
  # Takes a published version's files from `dir` on this node into the cache
  # (each chunk verified against the manifest) and seeds them, so peers need
  # not read the origin. `dir` must hold the files the version was built from.
  seed @2 (ref :Text, token :Text, dir :Text) -> (chunks :UInt64, bytes :UInt64);
}
