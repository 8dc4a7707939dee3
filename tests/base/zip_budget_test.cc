// Decompression within the memory budget (base/budget.h, `--max-memory`): what extracting zip
// members and .npz arrays would allocate is accounted from the declared sizes before anything is
// inflated — one member and many together, at the budget and one byte past it — declared sizes
// that lie are never trusted, and every refusal names the member and --max-memory. The budgets
// are tiny, so no test allocates more than a few MiB.
#include <gtest/gtest.h>

#include "base/budget.h"
#include "base/npz.h"
#include "base/testing/zip_writer.h"
#include "base/zip.h"

namespace detrain {
namespace {

using testing::PatchLe;
using testing::WriteZip;
using testing::ZipLayout;
using testing::ZipMember;

// A budget for one test; the default again after it.
class Budget {
 public:
  Budget(int64_t tensor, int64_t total) { SetMemoryBudget({tensor, total}); }
  ~Budget() { SetMemoryBudget({0, 0}); }
};

ZipMember Zeros(const std::string& name, size_t n, bool deflate) {
  ZipMember m{name, std::string(n, '\0')};
  m.deflate = deflate;
  return m;
}

// Extracts every member, or the first error.
Result<std::vector<std::string>> ExtractAll(std::string_view zip) {
  DETRAIN_ASSIGN_OR_RETURN(std::vector<ZipEntry> entries, ReadZipDirectory(zip));
  std::vector<std::string> out;
  for (const ZipEntry& e : entries) {
    DETRAIN_ASSIGN_OR_RETURN(std::string data, ExtractZipEntry(zip, e));
    out.push_back(std::move(data));
  }
  return out;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Sets the one member's declared uncompressed size in both headers (numpy's layout: a ZIP64
// extra field in the local header, 32-bit fields in the central one).
void DeclareSize(std::string* zip, const ZipLayout& l, const std::string& name, uint64_t size) {
  PatchLe(zip, l.local[0] + 22, 0xffffffff, 4);
  PatchLe(zip, l.local[0] + 30 + name.size() + 4, size, 8);
  PatchLe(zip, l.central[0] + 24, size, 4);
}

TEST(ZipBudgetTest, OneMemberAtTheBudgetAndOneBytePast) {
  constexpr int64_t kSize = int64_t{1} << 20;  // 1 MiB of zeros: about 1 KiB deflated
  for (bool deflate : {true, false}) {
    const std::string zip = WriteZip({Zeros("x.npy", kSize, deflate)});
    {
      Budget at(kSize, kSize);
      Result<std::vector<std::string>> r = ExtractAll(zip);
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_EQ((*r)[0].size(), static_cast<size_t>(kSize));
    }
    Budget past(kSize - 1, int64_t{1} << 30);
    Result<std::vector<std::string>> r = ExtractAll(zip);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
    const std::string& m = r.status().message();
    EXPECT_EQ(m.rfind(deflate ? "extracting member 'x.npy' (deflated, "
                              : "extracting member 'x.npy' (stored, 1.0 MiB in the archive)",
                      0),
              0u)
        << m;
    EXPECT_TRUE(Contains(m, "needs 1.0 MiB, more than the one-tensor memory budget of ")) << m;
    EXPECT_TRUE(Contains(m, "(raise it with --max-memory SIZE")) << m;
  }
}

// The deflate bomb of the review, scaled down: a member of ~1 KiB that inflates to 1000 times
// its size is refused from its declared size, before one byte is inflated.
TEST(ZipBudgetTest, ABombIsRefusedBeforeInflating) {
  const std::string zip = WriteZip({Zeros("x.npy", 4 << 20, true)});
  ASSERT_LT(zip.size(), 8u << 10);
  Budget b(256 << 10, 256 << 10);
  Result<std::vector<ZipEntry>> entries = ReadZipDirectory(zip);
  ASSERT_TRUE(entries.ok()) << entries.status().message();
  Status s = CheckExtractionBudget({&(*entries)[0]});
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.message(),
                       "needs 4.0 MiB, more than the one-tensor memory budget of "
                       "256.0 KiB"))
      << s.message();
  EXPECT_EQ(ExtractZipEntry(zip, (*entries)[0]).status().message(), s.message());
}

TEST(ZipBudgetTest, ManyMembersAreAccountedTogether) {
  std::vector<ZipMember> members;
  for (char c = 'a'; c < 'f'; ++c)
    members.push_back(Zeros(std::string(1, c) + ".npy", 1000, c % 2));
  const std::string zip = WriteZip(members);
  Result<std::vector<ZipEntry>> entries = ReadZipDirectory(zip);
  ASSERT_TRUE(entries.ok()) << entries.status().message();
  std::vector<const ZipEntry*> all;
  for (const ZipEntry& e : *entries) all.push_back(&e);
  {
    Budget at(1000, 5000);  // each exactly at the one-tensor limit, all exactly at the total
    EXPECT_TRUE(CheckExtractionBudget(all).ok());
  }
  Budget past(1000, 4999);
  Status s = CheckExtractionBudget(all);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "extracting the 5 members 'a.npy', 'b.npy', 'c.npy' and 2 more together needs 4.9 "
            "KiB, more than the total memory budget of 4.9 KiB (raise it with --max-memory SIZE, "
            "e.g. --max-memory 64G)");
  // Each member alone fits: extracting them one at a time is the caller's choice.
  EXPECT_TRUE(CheckExtractionBudget({all[0], all[1], all[2], all[3]}).ok());
  EXPECT_TRUE(ExtractAll(zip).ok());
}

// Sizes that lie: the declared size is an upper bound that inflation never passes, a size that
// deflate cannot reach is refused from the headers, and a size beyond the budget is refused
// before inflating even when the data would inflate to far less.
TEST(ZipBudgetTest, LyingSizesAreNeverTrusted) {
  ZipLayout l;
  const std::string good = WriteZip({Zeros("x.npy", 100000, true)}, {}, &l);
  const uint64_t compressed = l.central[0] - l.data[0];

  std::string small = good;  // declares 1000 bytes; inflates to 100000
  DeclareSize(&small, l, "x.npy", 1000);
  {
    Budget b(1000, 1000);
    EXPECT_EQ(ExtractAll(small).status().message(),
              "member 'x.npy': inflates to more than its declared 1000 bytes");
  }

  // At deflate's largest expansion (1032:1) the headers are believed and inflation finds the
  // lie; one byte past it the headers alone are refused.
  std::string at_ratio = good;
  DeclareSize(&at_ratio, l, "x.npy", 1032 * compressed + 1031);
  EXPECT_EQ(ExtractAll(at_ratio).status().message(),
            "member 'x.npy': inflates to 100000 bytes, not its declared " +
                std::to_string(1032 * compressed + 1031));
  std::string past_ratio = good;
  DeclareSize(&past_ratio, l, "x.npy", 1032 * compressed + 1032);
  Result<std::vector<std::string>> r = ExtractAll(past_ratio);
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message(),
            "member 'x.npy': declares " + std::to_string(1032 * compressed + 1032) +
                " bytes uncompressed, more than its " + std::to_string(compressed) +
                " bytes of deflate data can hold (deflate expands at most 1032:1)");

  Budget b(100000, 100000);  // the data would fit exactly; its declared size does not
  r = ExtractAll(at_ratio);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(r.status().message(), "extracting member 'x.npy' (deflated, "))
      << r.status().message();
}

NpyArray F32Zeros(int64_t n) {
  return {NpyDtype::kF32, {n}, std::string(static_cast<size_t>(4 * n), '\0')};
}

// ParseNpz accounts the arrays it is asked for, together, before extracting any; the others in
// the archive do not count.
TEST(ZipBudgetTest, NpzArraysAreAccountedBeforeExtraction) {
  const std::map<std::string, NpyArray> arrays = {
      {"x", F32Zeros(1000)}, {"y", F32Zeros(1000)}, {"z", F32Zeros(100000)}};
  const std::string npz = testing::WriteNpz(arrays, true);
  const int64_t member = static_cast<int64_t>(SerializeNpy(arrays.at("x")).size());
  {
    Budget at(member, 2 * member);
    Result<std::map<std::string, NpyArray>> r = ParseNpz(npz, {"x", "y"});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->at("y").data, arrays.at("y").data);
  }
  Budget past(member, 2 * member - 1);
  Result<std::map<std::string, NpyArray>> r = ParseNpz(npz, {"x", "y"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("extracting the 2 members 'x.npy', 'y.npy' together", 0), 0u)
      << r.status().message();
  r = ParseNpz(npz);  // every member: z alone is past the one-tensor limit
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("extracting member 'z.npy' (deflated, ", 0), 0u)
      << r.status().message();
}

}  // namespace
}  // namespace detrain
