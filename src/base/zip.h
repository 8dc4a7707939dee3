// Reading ZIP archives (PKWARE APPNOTE.TXT 6.3), as far as NumPy's .npz files need: members
// STORED (method 0, np.savez) or DEFLATEd (method 8, np.savez_compressed), with ZIP64 sizes and
// offsets (numpy writes a ZIP64 extra field for every member) and an optional data descriptor.
//
// The archive is hostile input. The end-of-central-directory record is found by a bounded
// backward scan (its comment must end exactly at the end of the file); every offset and size is
// checked against the file before anything is read or allocated; the central directory must lie
// before its end record, and every member's local header and data before the central directory,
// without overlapping another member's. A member's local header must agree with its central one
// (name, method, and — unless a data descriptor follows the data — CRC-32 and sizes). Names are
// non-empty and unique. Encrypted members, split (multi-disk) archives and other compression
// methods are rejected. Extraction writes at most the declared size (a member that inflates to
// more or fewer bytes is an error), the declared sizes of all members together are capped, and
// the CRC-32 of every extracted member is checked. Errors are DataLoss (corrupt or truncated) or
// InvalidArgument (well formed but unsupported) and name the member.
//
// Memory: what extraction allocates is accounted against the memory budget (base/budget.h,
// `--max-memory`) before it is allocated, from the declared sizes: each member against the
// one-tensor limit, the members a caller extracts together against the total limit
// (CheckExtractionBudget). The declared size is never trusted beyond that: inflation runs in
// bounded chunks into a buffer of the declared size and stops at the first byte past it. So a
// small archive that inflates to gigabytes ("zip bomb") costs at most what the budget allows.
// The one ratio limit is deflate's own: a member that declares more than 1032 times its
// compressed size (more than any deflate stream can expand to) is refused from its headers.
// Memory is bounded by the budget, not by a tighter ratio: legitimate arrays of zeros come
// close to 1032:1.
//
// Thread safety: pure functions of the bytes.
#ifndef DETRAIN_BASE_ZIP_H_
#define DETRAIN_BASE_ZIP_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace detrain {

// The default cap on the sum of the members' uncompressed sizes.
inline constexpr uint64_t kZipMaxTotalSize = uint64_t{16} << 30;  // 16 GiB

struct ZipEntry {
  std::string name;
  uint16_t method = 0;           // 0 stored, 8 deflate
  uint32_t crc32 = 0;            // of the uncompressed bytes, as the central directory says
  uint64_t compressed_size = 0;  // bytes of member data in the archive
  uint64_t size = 0;             // uncompressed
  uint64_t data_offset = 0;      // where the member data starts (after its local header)
};

// A member name for messages: bytes outside printable ASCII as \xNN (names are hostile too).
std::string PrintableName(std::string_view name);

// The members of an archive in central-directory order, every structural check above done.
// `max_total_size` caps the sum of the declared uncompressed sizes.
Result<std::vector<ZipEntry>> ReadZipDirectory(std::string_view bytes,
                                               uint64_t max_total_size = kZipMaxTotalSize);

// Whether extracting `members` together fits the memory budget: each member's declared size
// against the one-tensor limit, their sum against the total limit. An error (InvalidArgument)
// names the member (or the members) and --max-memory.
Status CheckExtractionBudget(const std::vector<const ZipEntry*>& members);

// The uncompressed bytes of one member of `bytes`, as ReadZipDirectory(bytes) returned it:
// exactly entry.size bytes whose CRC-32 is entry.crc32. The member alone must fit the budget
// (CheckExtractionBudget({&entry})); that is checked before anything is allocated.
Result<std::string> ExtractZipEntry(std::string_view bytes, const ZipEntry& entry);

}  // namespace detrain

#endif  // DETRAIN_BASE_ZIP_H_
