// PiecesRoot: a file's identity, its BEP 52 `pieces root`.
//
// The merkle root over all of the file's 16 KiB block hashes. It does not
// depend on the piece size, so identical files share one ID, one torrent and
// one swarm. An empty file's pieces root is all zeros.
#ifndef SHOAL_PIECES_ROOT_H_
#define SHOAL_PIECES_ROOT_H_

#include "shoal/hash256.h"

namespace shoal {

struct PiecesRootTag {
  static constexpr const char* kName = "pieces root";
};
using PiecesRoot = Hash256<PiecesRootTag>;

}  // namespace shoal

#endif  // SHOAL_PIECES_ROOT_H_
