@0xd4c9b8ad67551184;
# The JSON of an OCI distribution registry, as `shoal import oci://…` reads
# it: an image manifest carrying a CNCF ModelPack artifact, and the token
# endpoint's answer. Field names are the specifications'; fields not listed
# here are ignored.

using Cxx = import "/capnp/c++.capnp";
using Json = import "/capnp/compat/json.capnp";
$Cxx.namespace("shoal::proto::oci");

# The annotations a ModelPack layer may carry to name its file.
struct Annotations {
  filepath @0 :Text $Json.name("org.cncf.model.filepath");
  cnaiFilepath @1 :Text $Json.name("org.cnai.model.filepath");
  title @2 :Text $Json.name("org.opencontainers.image.title");
}

struct Descriptor {
  mediaType @0 :Text;
  digest @1 :Text;          # "sha256:<64 hex>"
  size @2 :UInt64;
  annotations @3 :Annotations;
}

# application/vnd.oci.image.manifest.v1+json
struct ImageManifest {
  schemaVersion @0 :UInt32;
  mediaType @1 :Text;
  artifactType @2 :Text;    # application/vnd.cncf.model.manifest.v1+json for ModelPack
  config @3 :Descriptor;
  layers @4 :List(Descriptor);
}

# What a registry's token endpoint answers (Docker token authentication).
struct TokenAnswer {
  token @0 :Text;
  accessToken @1 :Text $Json.name("access_token");
}
