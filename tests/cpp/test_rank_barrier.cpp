// The rendezvous both backends use (strategies/backend/rank_barrier.hpp): every member passes a
// generation together, any() agrees on every rank, a failure releases the waiters, a departure
// lowers the count, a timeout ends a wait for a rank that never comes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.hpp"
#include "strategies/backend/rank_barrier.hpp"

namespace shardaccum {
namespace {

constexpr double kLong = 20;  // never reached when the barrier works: the tests end earlier

/// Runs fn(rank) on `n` threads; returns each one's exception.
template <class F>
std::vector<std::exception_ptr> on_threads(int n, F fn) {
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

TEST(RankBarrier, NoRankPassesBeforeEveryRankArrived) {
  constexpr int kRanks = 4, kRounds = 50;
  RankBarrier b(kRanks);
  std::vector<std::atomic<int>> arrived(kRounds);
  std::atomic<int> early{0};
  const auto errors = on_threads(kRanks, [&](int) {
    for (int k = 0; k < kRounds; ++k) {
      arrived[k].fetch_add(1);
      b.arrive_and_wait(kLong, "round");
      if (arrived[k].load() != kRanks) early.fetch_add(1);
    }
  });
  for (const auto& e : errors) EXPECT_FALSE(e);
  EXPECT_EQ(early.load(), 0);
}

TEST(RankBarrier, AnyIsTrueOnEveryRankIfOneRankSaysSo) {
  constexpr int kRanks = 3;
  RankBarrier b(kRanks);
  std::vector<char> none(kRanks), one(kRanks);
  const auto errors = on_threads(kRanks, [&](int r) {
    none[r] = b.any(r, false, kLong, "none");
    one[r] = b.any(r, r == 2, kLong, "one");
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_FALSE(errors[r]);
    EXPECT_FALSE(none[r]) << "rank " << r;
    EXPECT_TRUE(one[r]) << "rank " << r;
  }
}

TEST(RankBarrier, AFailedRankReleasesTheWaitersWithPeerFailure) {
  RankBarrier b(3);  // ranks 1 and 2 on threads; rank 0 (this thread) fails instead of arriving
  std::vector<std::future<void>> waiters;
  for (int r = 1; r < 3; ++r)
    waiters.push_back(std::async(std::launch::async, [&b, r] {
      b.arrive_and_wait(RankBarrier::kNoTimeout, "rank " + std::to_string(r) + ": any_rank");
    }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // most likely both wait by now
  b.fail();
  for (int r = 1; r < 3; ++r) {
    auto& w = waiters[r - 1];
    if (w.wait_for(std::chrono::duration<double>(kLong)) != std::future_status::ready) {
      ADD_FAILURE() << "rank " << r << " still waits after the failure";
      b.leave();  // lets the stuck waiters pass, so that the test ends
      b.leave();
    }
    try {
      w.get();
      ADD_FAILURE() << "rank " << r << " passed a barrier rank 0 never reached";
    } catch (const PeerFailure& e) {
      EXPECT_EQ(std::string(e.what()),
                "rank " + std::to_string(r) + ": any_rank: another rank failed");
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank " << r << ": not a PeerFailure: " << e.what();
    }
  }
  EXPECT_TRUE(b.failed());
  EXPECT_TRUE(b.failed_flag()->load());
  EXPECT_THROW(b.arrive_and_wait(kLong, "later"), PeerFailure);  // a later arrival fails at once
}

TEST(RankBarrier, ResetMakesAFailedBarrierUsableAgain) {
  RankBarrier b(2);
  b.fail();
  b.reset();
  EXPECT_FALSE(b.failed());
  const auto errors = on_threads(2, [&](int) { b.arrive_and_wait(kLong, "after reset"); });
  EXPECT_FALSE(errors[0]);
  EXPECT_FALSE(errors[1]);
}

TEST(RankBarrier, ARankThatLeavesIsNotWaitedFor) {
  RankBarrier b(3);
  std::atomic<int> passed{0};
  const auto errors = on_threads(3, [&](int r) {
    if (r == 0) {
      // Finished its run (the host backend's arrive_and_drop), most likely once the others wait.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      b.leave();
      return;
    }
    b.arrive_and_wait(kLong, "two of three");
    b.arrive_and_wait(kLong, "two of three, again");
    passed.fetch_add(1);
  });
  for (const auto& e : errors) EXPECT_FALSE(e);
  EXPECT_EQ(passed.load(), 2);
}

TEST(RankBarrier, AWaitForARankThatNeverComesTimesOut) {
  RankBarrier b(2);
  try {
    b.arrive_and_wait(0.05, "rank 1: ceilings");
    FAIL() << "passed a barrier the other rank never reached";
  } catch (const BarrierTimeout& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1: ceilings: timed out after"), std::string::npos)
        << e.what();
  }
  // The timed-out arrival no longer counts: two later arrivals make one generation, not more.
  const auto errors = on_threads(2, [&](int) { b.arrive_and_wait(kLong, "after timeout"); });
  EXPECT_FALSE(errors[0]);
  EXPECT_FALSE(errors[1]);
}

}  // namespace
}  // namespace shardaccum
