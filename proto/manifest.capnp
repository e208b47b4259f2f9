@0xc5b0b8a1d2e3f401;
# The manifest: one immutable checkpoint version.
#
# A Manifest is stored and hashed in Cap'n Proto canonical form; its version
# ID is the SHA-256 of those bytes. Field numbers are fixed forever.

using Cxx = import "/capnp/c++.capnp";
using Json = import "/capnp/compat/json.capnp";
$Cxx.namespace("shoal::proto");

struct Manifest {
  formatVersion @0 :UInt16;       # 1; a reader refuses versions it does not know
  namespace @1 :Text;             # the owning team, e.g. "team-a"
  name @2 :Text;                  # the model's name within the namespace
  createdBy @3 :Text;             # who published it: a token subject or user name
  createdAtMs @4 :Int64;          # when, in milliseconds since the Unix epoch (UTC)
  parentVersion @5 :Data $Json.hex;  # the version this one derives from; empty if none
  labels @6 :List(Label);         # free-form key=value pairs, sorted by key
  pieceSize @7 :UInt32;           # bytes per chunk: a power of two in [16 KiB, 64 MiB]
  files @8 :List(FileEntry);      # sorted by path, bytewise
  emptyDirs @9 :List(Text);       # folders with no files, so a pull recreates them
  source @10 :Source;             # where an imported version came from; null if published from a folder
}

# Provenance of an imported version: what `shoal import` read.
struct Source {
  url @0 :Text;                   # as given: hf://org/repo, s3://bucket/prefix, https://host/path
  revision @1 :Text;              # as asked: a hub revision or registry tag; empty if none
  commit @2 :Text;                # as resolved: the hub's commit sha or the manifest digest; empty if none
}

struct Label {
  key @0 :Text;                   # [A-Za-z0-9._/-], at most 128 bytes
  value @1 :Text;                 # any UTF-8 without NUL, at most 1024 bytes
}

struct FileEntry {
  path @0 :Text;                  # relative, '/'-separated; no '..', '.', empty parts, NUL or '\'
  size @1 :UInt64;                # bytes
  mode @2 :UInt32;                # permission bits only (0 to 0o777)
  piecesRoot @3 :Data $Json.hex;  # BEP 52 pieces root, 32 bytes; empty for an empty file
  pieceLayer @4 :Data $Json.hex;  # concatenated 32-byte piece hashes; empty if size <= pieceSize
  sha256 @5 :Data $Json.hex;      # SHA-256 of the whole file, 32 bytes; empty if not recorded
  sourceEtag @6 :Text;            # imported files: the source's ETag or hash of this file
}

# How a manifest travels: its canonical bytes, its ID and the tracker's
# signature over the ID.
struct SignedManifest {
  versionId @0 :Data $Json.hex;   # SHA-256 of `manifest`
  manifest @1 :Data;              # canonical bytes of a Manifest
  signature @2 :Data $Json.hex;   # Ed25519 over versionId; empty until a tracker signs it
  signerKeyId @3 :Text;           # which tracker key signed
  upstream @4 :UpstreamSignature; # a mirrored version: the cluster it came from; null otherwise
}

# A version a tracker copied from another cluster's (--follow): that
# cluster's own signature, kept beside the mirror's.
struct UpstreamSignature {
  tracker @0 :Text;               # the upstream tracker's address, as followed
  signature @1 :Data $Json.hex;   # its Ed25519 signature over versionId
  signerKeyId @2 :Text;           # which of its keys signed
  publicKey @3 :Data $Json.hex;   # that key, so the signature can be checked anywhere
  copiedAtMs @4 :Int64;           # when the mirror committed it
}
