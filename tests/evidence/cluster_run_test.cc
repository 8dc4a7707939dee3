// Multi-process runs through the library (runtime/cluster.h, attested_run.h "Processes"): P
// ranks as threads of this process on the in-process cluster, each calling RunAttested as each
// `mpirun` process does. The same protocol as MPI without a launcher, so it also runs under the
// sanitizers; tests/cli/mpi_test.py runs the real thing.
//   - P ∈ {2, 4} × devices ∈ {1, 2}: the bundle's step records and final step hash are those of
//     one process, and it verifies (on one process);
//   - `verify` on P ranks shares the replay's segments and merges their verdicts on rank 0;
//   - the ranks' records are in environment.json; the mesh that does not divide the shards, a
//     rank with another program, and a rank that never answers are errors naming the rank, on
//     every rank, before any step.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "attest/canonical_json.h"
#include "base/file_io.h"
#include "evidence/bundle/attested_run.h"
#include "evidence/verify/verifier.h"
#include "evidence/verify/verifier_internal.h"
#include "runtime/cluster.h"
#include "temp_dir.h"

namespace detrain::bundle {
namespace {

using nlohmann::json;

const std::string kTiny =
    std::string(DETRAIN_SOURCE_DIR) + "/tests/evidence/testdata/tiny/train.dt";
const std::string kBreast = std::string(DETRAIN_SOURCE_DIR) + "/examples/breast_cancer/train.dt";

// Temporary directories named after this test.
class TempDir : public testutil::TempDir {
 public:
  TempDir() : testutil::TempDir("detrain_cluster") {}
};

RunOptions Options(const std::string& program, const std::string& out, int devices) {
  RunOptions o;
  o.program = program;
  o.output_dir = out;
  o.executor.devices = devices;
  o.detrain_version = "test";
  return o;
}

// Runs `per_rank[r]` on rank r of an in-process cluster of per_rank.size() ranks, each on its
// own thread; returns every rank's result.
std::vector<Result<RunSummary>> RunRanks(std::vector<RunOptions> per_rank, double timeout = 60,
                                         int silent_rank = -1) {
  const int p = static_cast<int>(per_rank.size());
  auto clusters = runtime::MakeLocalClusters(p, timeout);
  std::vector<Result<RunSummary>> results(static_cast<size_t>(p), Internal("not run"));
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r) {
    if (r == silent_rank) continue;  // a rank that died before it said anything
    threads.emplace_back([&, r] {
      RunOptions o = per_rank[static_cast<size_t>(r)];
      o.executor.cluster = clusters[static_cast<size_t>(r)];
      results[static_cast<size_t>(r)] = RunAttested(o);
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

std::vector<RunOptions> Same(const RunOptions& o, int p) { return std::vector<RunOptions>(p, o); }

json Environment(const std::string& bundle) {
  Result<std::string> text = ReadFile(bundle + "/environment.json");
  EXPECT_TRUE(text.ok());
  return json::parse(text.ok() ? *text : "{}");
}

TEST(ClusterRun, AnyProcessAndDeviceCountGivesTheSingleProcessBundle) {
  TempDir dir;
  Result<RunSummary> one = RunAttested(Options(kTiny, dir.Sub("one"), 1));
  ASSERT_TRUE(one.ok()) << one.status().message();
  Result<std::string> one_steps = ReadFile(dir.Sub("one") + "/steps.jsonl");
  ASSERT_TRUE(one_steps.ok());
  for (int p : {2, 4}) {
    for (int d : {1, 2}) {
      if (p * d > 4) continue;  // tiny has 4 shards
      const std::string out = dir.Sub("p" + std::to_string(p) + "d" + std::to_string(d));
      std::vector<Result<RunSummary>> r = RunRanks(Same(Options(kTiny, out, d), p));
      ASSERT_TRUE(r[0].ok()) << r[0].status().message();
      EXPECT_TRUE(r[0]->complete);
      EXPECT_EQ(r[0]->final_step_hash, one->final_step_hash) << "P " << p << " D " << d;
      for (int f = 1; f < p; ++f) {
        ASSERT_TRUE(r[static_cast<size_t>(f)].ok()) << r[static_cast<size_t>(f)].status().message();
        EXPECT_EQ(r[static_cast<size_t>(f)]->follower_exit_code, 0);
      }
      Result<std::string> steps = ReadFile(out + "/steps.jsonl");
      ASSERT_TRUE(steps.ok());
      EXPECT_TRUE(*steps == *one_steps) << "steps.jsonl differs, P " << p << " D " << d;
      // The ranks, as they reported themselves.
      const json processes = Environment(out)["processes"];
      ASSERT_EQ(processes.size(), static_cast<size_t>(p));
      for (int q = 0; q < p; ++q) {
        EXPECT_EQ(processes[static_cast<size_t>(q)]["rank"], q);
        EXPECT_EQ(processes[static_cast<size_t>(q)]["devices"], d);
        EXPECT_EQ(processes[static_cast<size_t>(q)]["data"], processes[0]["data"]);
      }
      verify::VerifyOptions v;
      v.bundle = out;
      verify::VerifyReport report = verify::VerifyBundle(v);
      EXPECT_EQ(report.outcome, verify::Outcome::kVerified) << report.message;
    }
  }
  EXPECT_FALSE(Environment(dir.Sub("one")).contains("processes"));
}

TEST(ClusterRun, AnExampleOnTwoProcessesOfTwoDevices) {
  TempDir dir;
  RunOptions o = Options(kBreast, dir.Sub("one"), 1);
  o.steps = 8;
  Result<RunSummary> one = RunAttested(o);
  ASSERT_TRUE(one.ok()) << one.status().message();
  RunOptions two = Options(kBreast, dir.Sub("two"), 2);
  two.steps = 8;
  std::vector<Result<RunSummary>> r = RunRanks(Same(two, 2));
  ASSERT_TRUE(r[0].ok()) << r[0].status().message();
  EXPECT_EQ(r[0]->final_step_hash, one->final_step_hash);
}

TEST(ClusterRun, AMeshThatDoesNotDivideTheShardsIsRefusedOnEveryRank) {
  TempDir dir;
  std::vector<Result<RunSummary>> r = RunRanks(Same(Options(kTiny, dir.Sub("b"), 2), 4));
  ASSERT_FALSE(r[0].ok());
  EXPECT_NE(r[0].status().message().find(
                "a mesh of 4 processes × --devices 2 = 8 devices: the mesh's device count must "
                "divide the program's 4 shards"),
            std::string::npos)
      << r[0].status().message();
  for (int f = 1; f < 4; ++f) {
    ASSERT_FALSE(r[static_cast<size_t>(f)].ok());
    const Status& st = r[static_cast<size_t>(f)].status();
    EXPECT_EQ(st.code(), StatusCode::kCancelled) << st.message();
    EXPECT_EQ(st.message().rfind(runtime::kStoppedByRankZero, 0), 0u) << st.message();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("b")));  // nothing written
}

TEST(ClusterRun, ARankWithOtherStagesIsNamedBeforeTheFirstStep) {
  TempDir dir;
  std::vector<RunOptions> ranks = Same(Options(kTiny, dir.Sub("b"), 1), 2);
  ranks[1].program = kBreast;  // as if rank 1 had another version of the program
  ranks[1].steps = 24;
  std::vector<Result<RunSummary>> r = RunRanks(ranks);
  ASSERT_FALSE(r[0].ok());
  const std::string& m = r[0].status().message();
  EXPECT_NE(m.find("rank 1 (host local) differs from rank 0 in its "), std::string::npos) << m;
  EXPECT_NE(m.find("every rank must run the same detrain on the same program and data"),
            std::string::npos)
      << m;
  ASSERT_FALSE(r[1].ok());
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("b")));

  ranks = Same(Options(kTiny, dir.Sub("c"), 1), 2);
  ranks[1].detrain_version = "another";
  r = RunRanks(ranks);
  ASSERT_FALSE(r[0].ok());
  EXPECT_NE(r[0].status().message().find("rank 1 (host local) differs from rank 0 in its detrain "
                                         "version: \"another\", rank 0 \"test\""),
            std::string::npos)
      << r[0].status().message();
}

TEST(ClusterRun, RanksWithDifferentDeviceCountsAreRefused) {
  TempDir dir;
  std::vector<RunOptions> ranks = Same(Options(kTiny, dir.Sub("b"), 1), 2);
  ranks[1].executor.devices = 2;  // the mesh would differ between the ranks
  std::vector<Result<RunSummary>> r = RunRanks(ranks);
  ASSERT_FALSE(r[0].ok());
  EXPECT_NE(r[0].status().message().find(
                "rank 1 (host local) differs from rank 0 in its --devices (every rank must hold "
                "the same count): 2, rank 0 1"),
            std::string::npos)
      << r[0].status().message();
  EXPECT_FALSE(r[1].ok());
}

TEST(ClusterRun, ARankThatNeverAnswersStopsTheRunWithinTheTimeout) {
  TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  std::vector<Result<RunSummary>> r =
      RunRanks(Same(Options(kTiny, dir.Sub("b"), 1), 2), /*timeout=*/1, /*silent_rank=*/1);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(r[0].ok());
  EXPECT_NE(r[0].status().message().find("rank 1 (host local) sent nothing for 1 s"),
            std::string::npos)
      << r[0].status().message();
  EXPECT_LT(seconds, 30);
}

// `mpirun -np P detrain verify`: the replay's segments dealt out over the ranks, rank 0's report
// holding every segment's verdict.
std::vector<verify::VerifyReport> VerifyOnRanks(const std::vector<std::string>& bundles) {
  const int p = static_cast<int>(bundles.size());
  auto clusters = runtime::MakeLocalClusters(p, 60);
  std::vector<verify::VerifyReport> reports(static_cast<size_t>(p));
  std::vector<std::thread> threads;
  for (int r = 0; r < p; ++r) {
    threads.emplace_back([&, r] {
      verify::VerifyOptions v;
      v.bundle = bundles[static_cast<size_t>(r)];
      v.cluster = clusters[static_cast<size_t>(r)];
      reports[static_cast<size_t>(r)] = verify::VerifyBundle(v);
    });
  }
  for (std::thread& t : threads) t.join();
  return reports;
}

TEST(ClusterVerify, SegmentsAreSharedAndTheVerdictsMerged) {
  TempDir dir;
  const std::string bundle = dir.Sub("b");
  ASSERT_TRUE(RunAttested(Options(kTiny, bundle, 1)).ok());  // 24 steps, 3 segments
  for (int p : {2, 3}) {
    std::vector<verify::VerifyReport> r = VerifyOnRanks(std::vector<std::string>(p, bundle));
    ASSERT_EQ(r[0].outcome, verify::Outcome::kVerified) << r[0].message;
    EXPECT_EQ(r[0].steps_replayed, 24) << "rank 0 counts every rank's segments, P " << p;
    for (int q = 1; q < p; ++q)
      EXPECT_EQ(r[static_cast<size_t>(q)].outcome, verify::Outcome::kVerified);
  }
  // A rank that cannot reach the replay stops every rank, named.
  std::vector<verify::VerifyReport> r = VerifyOnRanks({bundle, dir.Sub("absent")});
  EXPECT_EQ(r[0].outcome, verify::Outcome::kFailed);
  EXPECT_NE(r[0].message.find("rank 1 (host local) stopped before the replay: "), std::string::npos)
      << r[0].message;
  EXPECT_EQ(r[1].outcome, verify::Outcome::kFailed);  // rank 0's outcome
  // And rank 0's own failure is every rank's.
  r = VerifyOnRanks({dir.Sub("absent"), bundle});
  EXPECT_EQ(r[0].outcome, verify::Outcome::kInputError);
  EXPECT_EQ(r[1].outcome, verify::Outcome::kInputError);
}

// What ranks send each other is read as hostile input: every malformed record is an error
// naming the rank, never a crash or an exception.
std::string Rank(int r) { return "rank " + std::to_string(r) + " (host h)"; }

TEST(ClusterHostile, RankRecords) {
  const std::string ok =
      R"({"rank":0,"host":"h","devices":1,"detrain":"v","stages":"ab","data":["cd"]})";
  ASSERT_TRUE(runtime::CheckRankRecords({ok, ok}, Rank).ok());
  const std::string deep(100000, '[');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "rank 1 (host h) sent an unreadable record"},
      {deep, "rank 1 (host h) sent an unreadable record"},
      {std::string(1 << 16, '\0'), "rank 1 (host h) sent an unreadable record"},
      {"[1,2]", "rank 1 (host h) sent an unreadable record (not an object)"},
      {R"({"stages":1e999})", "rank 1 (host h) sent an unreadable record"},
      {"{\"host\":\"\xff\"}", "rank 1 (host h) sent an unreadable record"},
      {ok.substr(0, ok.size() / 2), "rank 1 (host h) sent an unreadable record"},
      {R"({"error":{"nested":[1]}})", "rank 1 (host h): {\"nested\":[1]}"},
      {R"({"error":"it did not compile"})", "rank 1 (host h): it did not compile"},
      {R"({"rank":9,"host":5,"devices":"x","detrain":"v","stages":"ab","data":{"a":1}})",
       "rank 1 (host h) differs from rank 0 in its data files' SHA-256: {\"a\":1}, rank 0 "
       "[\"cd\"]"},
      {R"({"detrain":"v","stages":"ab","data":["cd"],"devices":9223372036854775807})",
       "rank 1 (host h) differs from rank 0 in its --devices"},
  };
  for (const auto& [record, expected] : cases) {
    Result<nlohmann::json> r = runtime::CheckRankRecords({ok, record}, Rank);
    ASSERT_FALSE(r.ok()) << record.substr(0, 80);
    EXPECT_EQ(r.status().message().rfind(expected, 0), 0u)
        << r.status().message() << "\n for " << record.substr(0, 80);
  }
  // Fields of the wrong type are recorded with the schema's types.
  const std::string odd = R"({"rank":7,"host":[1],"devices":1,"detrain":"v","stages":"ab",)"
                          R"("data":["cd"],"extra":{"x":1}})";
  Result<nlohmann::json> r = runtime::CheckRankRecords({ok, odd}, Rank);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[1], nlohmann::json::parse(R"({"rank":1,"host":"","devices":1,"data":["cd"]})"));
}

TEST(ClusterHostile, SegmentVerdicts) {
  std::vector<verify::internal::SegmentVerdict> v;
  ASSERT_TRUE(
      verify::internal::ReadSegmentVerdicts(R"([[1,-1,"",5],[3,12,"bad",2]])", 1, 2, 4, &v).ok());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1].segment, 3u);
  EXPECT_EQ(v[1].first_bad, 12);
  EXPECT_EQ(v[1].message, "bad");
  for (const std::string& text :
       {std::string(), std::string(100000, '['), std::string(1 << 16, '\0'), std::string("{}"),
        std::string(R"([[0,-1,"",5]])"),      // rank 0's segment, from rank 1
        std::string(R"([[5,-1,"",5]])"),      // no such segment
        std::string(R"([[1,-3,"",5]])"),      // a step before -2 (kCannotReplayHere)
        std::string(R"([[1,-1,7,5]])"),       // a message that is no string
        std::string(R"([[1,-1,"",-5]])"),     // negative count
        std::string(R"([[1,-1,""]])"),        // short
        std::string(R"([[-1,-1,"",0]])"),     // negative segment
        std::string(R"([[1e300,-1,"",0]])"),  // not an integer
        std::string(R"([[1,-1,"",0],[1,-1,"",0],[1,-1,"",0],[1,-1,"",0],[1,-1,"",0]])")}) {
    v.clear();
    Status st = verify::internal::ReadSegmentVerdicts(text, 1, 2, 4, &v);
    EXPECT_FALSE(st.ok()) << text.substr(0, 60);
  }
}

TEST(ClusterHostile, LyingLengthsSizesAndControlMessages) {
  auto c = runtime::MakeLocalClusters(2, 1);
  for (int64_t lie : {int64_t{-1}, int64_t{1} << 62, int64_t{2} << 20}) {
    ASSERT_TRUE(c[1]->Send(0, runtime::Channel::kHandshake, &lie, sizeof(lie)).ok());
    Result<std::string> s = runtime::RecvString(*c[0], 1, runtime::Channel::kHandshake, 1 << 20);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("rank 1 (host local) announced a message of " +
                                        std::to_string(lie) + " bytes"),
              std::string::npos)
        << s.status().message();
  }
  // Fewer bytes than the receiver expects.
  ASSERT_TRUE(c[1]->Send(0, runtime::Channel::kData, "abc", 3).ok());
  char buffer[8];
  Status st = c[0]->Recv(1, runtime::Channel::kData, buffer, sizeof(buffer));
  EXPECT_NE(st.message().find("sent 3 bytes where 8 were expected"), std::string::npos)
      << st.message();
  // A control message that is neither stop nor run.
  const int64_t unknown[2] = {42, 0};
  ASSERT_TRUE(c[0]->Send(1, runtime::Channel::kControl, unknown, sizeof(unknown)).ok());
  Result<std::pair<runtime::Control, int64_t>> m = runtime::RecvControl(*c[1], 0);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("unknown control message 42"), std::string::npos);
}

}  // namespace
}  // namespace detrain::bundle
