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

# bytesFromPeers + bytesFromOrigin + bytesCached = totalBytes.
struct PullSummary {
  versionId @0 :Data;
  totalBytes @1 :UInt64;
  bytesFromPeers @2 :UInt64;
  bytesFromOrigin @3 :UInt64;     # read from the origin by this agent during the pull, for any reason
  bytesCached @4 :UInt64;         # in the cache before the pull, or content the version repeats
  seconds @5 :Float64;
  fileCount @6 :UInt32;
  firstChunkSeconds @7 :Float64;  # when the first missing chunk arrived; -1 if none was missing
}

# An open file handed from one process to the other over the control
# socket: the capability carries its descriptor (Capability.getFd), so the
# receiver acts on the file with the rights of whoever opened it.
interface FileHandle {}

struct DestFile {
  path @0 :Text;                  # relative to the destination, '/'-separated
  size @1 :UInt64;                # bytes the agent will write
  mode @2 :UInt32;                # the published mode; the caller makes it read-only at the end
}

struct FileBytes {
  index @0 :UInt32;               # in prepare's list
  data @1 :Data;                  # the whole file
}

interface PullListener {
  progress @0 (state :PullState) -> ();
  # Lays out the version in the caller's staging folder before any byte is
  # written: every folder, and every file created empty and owned by the
  # caller. The agent never resolves a path on the caller's side itself.
  prepare @1 (dirs :List(Text), files :List(DestFile)) -> ();
  # Opens files of prepare's list, by index, for writing and hands them
  # over, in the same order; at most 64 in one call.
  openFiles @2 (indexes :List(UInt32)) -> (files :List(FileHandle));
  # Writes small files of prepare's list whole, by index: each one's bytes
  # in one piece, exactly its size. At most 1,024 files and 4 MiB of data in
  # one call. Cheaper than a descriptor each for a version of many small
  # files.
  writeFiles @3 (files :List(FileBytes)) -> ();
}

interface SeedSource {
  # Opens `path` (relative to the folder being seeded) for reading, as the
  # caller, and hands it over.
  openFile @0 (path :Text) -> (file :FileHandle);
}

# One file of a mounted version, as the manifest gives it.
struct MountFile {
  path @0 :Text;                  # relative, '/'-separated
  size @1 :UInt64;                # bytes
  mode @2 :UInt32;                # the published permission bits
  piecesRoot @3 :Data;            # 32 bytes; zero for an empty file
}

# A published version held open by `shoal mount`. The reference was
# resolved once, when the mount began: a tag moved later does not change
# what this capability shows.
interface MountedVersion {
  # The version's files and empty folders, in the manifest's order (a
  # file's index here is its index in `chunk`).
  files @0 () -> (versionId :Data, createdAtMs :Int64, pieceSize :UInt32,
                  files :List(MountFile), emptyDirs :List(Text));
  # Piece `piece` of file `file`, fetched as an HTTP read's is (peers, then
  # the chunk's owner, then the origin) if this agent lacks it, with the
  # pieces up to `lastPiece` asked for meanwhile. `handle` carries the
  # chunk file's descriptor, opened read-only; the chunk stays pinned in the
  # cache while the handle lives. The piece is bytes [offset, offset +
  # length) of that file.
  chunk @1 (file :UInt32, piece :UInt64, lastPiece :UInt64)
      -> (handle :FileHandle, offset :UInt64, length :UInt64);
}

interface LocalAgent {
  # Pulls ns/name:ref with the caller's token (which must allow reading the
  # namespace) and writes it, as chunks arrive, into files that the caller
  # creates and opens through `listener`; the caller then moves the folder
  # into place. `dest` only names the destination in logs.
  # With `labels` ("key=value"), `ref` names only the model and the newest
  # version carrying every label is pulled.
  pull @0 (ref :Text, token :Text, dest :Text, listener :PullListener, labels :List(Text))
      -> (summary :PullSummary);
  status @1 () -> (stats :T.AgentStats, agentId :Text, epoch :UInt64);
  # Takes a published version's files, opened by the caller through
  # `source`, into the cache (each chunk verified against the manifest) and
  # seeds them, so peers need not read the origin. `dir` only names the
  # folder in logs.
  seed @2 (ref :Text, token :Text, dir :Text, source :SeedSource) -> (chunks :UInt64, bytes :UInt64);
  # Resolves ns/name:ref once with the caller's token (which must allow
  # reading the namespace) and hands back the version it names, for
  # `shoal mount`. Pass the version ID as `ref` to open the same version
  # again.
  mount @3 (ref :Text, token :Text) -> (version :MountedVersion, versionId :Data);
}
