@0xdf851979987c3199;
# The JSON of a Hugging Face–style hub's model API, as its clients read it:
# `shoal import hf://…` decodes these answers. Field names are the hub's;
# fields not listed here are ignored.

using Cxx = import "/capnp/c++.capnp";
using Json = import "/capnp/compat/json.capnp";
$Cxx.namespace("shoal::proto::hub");

# A large file's Git LFS pointer: the SHA-256 of its content.
struct LfsInfo {
  sha256 @0 :Text;       # in /api/models/{repo}?blobs=true siblings
  oid @1 :Text;          # in tree entries: the same SHA-256, hex
  size @2 :UInt64;
  pointerSize @3 :UInt64;
}

struct Sibling {
  rfilename @0 :Text;    # path in the repository
  size @1 :UInt64;       # with ?blobs=true
  blobId @2 :Text;       # the Git blob ID, with ?blobs=true
  lfs @3 :LfsInfo;       # null for a file kept in Git
}

# GET /api/models/{repo}[/revision/{rev}]
struct ModelInfo {
  id @0 :Text;           # "org/name"
  sha @1 :Text;          # the revision's commit
  siblings @2 :List(Sibling);
}

# One entry of GET /api/models/{repo}/tree/{rev}[/{path}]?recursive=true
struct TreeEntry {
  kind @0 :Text $Json.name("type");  # "file" or "directory"
  path @1 :Text;
  size @2 :UInt64;
  oid @3 :Text;          # the Git blob ID
  lfs @4 :LfsInfo;
}

# The tree API answers with a bare JSON array; it is decoded as {"entries": […]}.
struct TreePage {
  entries @0 :List(TreeEntry);
}

# The body of POST /api/models/{repo}/paths-info/{rev}, as the JavaScript
# client sends it (the Python client sends the same fields as a form).
struct PathsInfoRequest {
  paths @0 :List(Text);
  expand @1 :Bool;       # also each entry's last commit and scan status
}
