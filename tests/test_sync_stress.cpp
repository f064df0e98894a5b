// Randomised producer/consumer/select graphs over channels and mvars,
// checked against a serial model: every value sent is received exactly once,
// on the channel it was sent to, and the values one producer sent to one
// channel arrive in the order it sent them (FIFO per channel). Each graph is
// bounded in size; the seed is printed (WEFT_TEST_SEED replays one).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "test_util.hpp"
#include "weft/weft.hpp"

namespace {

using namespace weft_test;
using namespace std::chrono_literals;

class SyncStress : public Workers {};
WEFT_INSTANTIATE_WORKERS(SyncStress);

// A value encodes (producer, channel, sequence number).
constexpr long encode(long producer, long ch, long seq) { return (producer << 40) | (ch << 20) | seq; }
constexpr long producer_of(long v) { return v >> 40; }
constexpr long channel_of(long v) { return (v >> 20) & 0xFFFFF; }
constexpr long seq_of(long v) { return v & 0xFFFFF; }

struct graph {
  int channels, producers, consumers_per_channel_group, per_producer;
  std::vector<std::size_t> capacity;
  // Producer p sends its values to the channels in plan[p] (in that order).
  std::vector<std::vector<int>> plan;
  // Consumer groups: each owns a set of channels and receives from them with
  // select (or plain recv when it owns one channel).
  std::vector<std::vector<int>> groups;
  std::vector<bool> producer_uses_select;
};

graph make_graph(std::mt19937_64& rng) {
  graph g;
  g.channels = 1 + static_cast<int>(rng() % 5);
  g.producers = 1 + static_cast<int>(rng() % 6);
  g.per_producer = static_cast<int>(scaled(300, 60) + rng() % 100);
  const std::size_t caps[] = {0, 1, 2, 8, weft::unbounded};
  for (int c = 0; c < g.channels; ++c) g.capacity.push_back(caps[rng() % 5]);
  for (int p = 0; p < g.producers; ++p) {
    std::vector<int> targets;
    for (int i = 0; i < g.per_producer; ++i) targets.push_back(static_cast<int>(rng() % g.channels));
    g.plan.push_back(targets);
    g.producer_uses_select.push_back(rng() % 2 == 0);
  }
  // Partition the channels among 1-3 consumer groups, each owning at most
  // three channels (the consumer's select has at most three cases).
  const int min_groups = (g.channels + 2) / 3, max_groups = std::min(3, g.channels);
  int ngroups = min_groups + static_cast<int>(rng() % static_cast<unsigned>(max_groups - min_groups + 1));
  g.groups.resize(static_cast<std::size_t>(ngroups));
  for (int c = 0; c < g.channels; ++c) g.groups[static_cast<std::size_t>(c % ngroups)].push_back(c);
  return g;
}

TEST_P(SyncStress, RandomChannelGraphsMatchTheSerialModel) {
  std::mt19937_64 rng(test_seed());
  const int graphs = static_cast<int>(scaled(12, 4));
  for (int round = 0; round < graphs; ++round) {
    graph g = make_graph(rng);
    // What each consumer group received, in order.
    std::vector<std::vector<long>> received(g.groups.size());
    auto rt = std::make_unique<weft::runtime>(options());
    bool ok = run_bounded(rt, [&] {
      std::vector<std::unique_ptr<weft::channel<long>>> chans;
      for (int c = 0; c < g.channels; ++c) chans.push_back(std::make_unique<weft::channel<long>>(g.capacity[static_cast<std::size_t>(c)]));
      weft::task_group producers;
      for (int p = 0; p < g.producers; ++p) {
        producers.spawn([&, p] {
          std::vector<long> seq(static_cast<std::size_t>(g.channels), 0);
          for (int target : g.plan[static_cast<std::size_t>(p)]) {
            long v = encode(p, target, seq[static_cast<std::size_t>(target)]++);
            if (g.producer_uses_select[static_cast<std::size_t>(p)]) {
              // A select with a send case and a receive case on a channel
              // that never delivers (only its send can fire).
              weft::channel<long> never;
              std::optional<long> none;
              int fired = weft::select(weft::recv_case(never, none), weft::send_case(*chans[static_cast<std::size_t>(target)], v));
              ASSERT_EQ(fired, 1);
            } else {
              chans[static_cast<std::size_t>(target)]->send(v);
            }
          }
        });
      }
      weft::task_group consumers;
      for (std::size_t gi = 0; gi < g.groups.size(); ++gi) {
        consumers.spawn([&, gi] {
          auto& mine = g.groups[gi];
          auto& out = received[gi];
          if (mine.size() == 1) {
            for (long v : *chans[static_cast<std::size_t>(mine[0])]) out.push_back(v);
            return;
          }
          // Up to three channels: select over those still open.
          ASSERT_LE(mine.size(), 3u);
          std::vector<int> open = mine;
          while (!open.empty()) {
            std::optional<long> v[3];
            int fired;
            if (open.size() == 3)
              fired = weft::select(weft::recv_case(*chans[static_cast<std::size_t>(open[0])], v[0]),
                                   weft::recv_case(*chans[static_cast<std::size_t>(open[1])], v[1]),
                                   weft::recv_case(*chans[static_cast<std::size_t>(open[2])], v[2]));
            else if (open.size() == 2)
              fired = weft::select(weft::recv_case(*chans[static_cast<std::size_t>(open[0])], v[0]),
                                   weft::recv_case(*chans[static_cast<std::size_t>(open[1])], v[1]));
            else
              fired = weft::select(weft::recv_case(*chans[static_cast<std::size_t>(open[0])], v[0]));
            ASSERT_GE(fired, 0);
            if (v[fired]) {
              out.push_back(*v[fired]);
            } else {
              open.erase(open.begin() + fired);  // closed and drained
            }
          }
        });
      }
      producers.sync();
      for (auto& c : chans) c->close();
      consumers.sync();
    }, std::chrono::seconds(120));
    ASSERT_TRUE(ok) << "graph " << round << " did not finish";
    // The serial model: every (producer, channel) sequence 0..n-1 exactly
    // once, in order within its consumer group's stream.
    std::vector<std::vector<long>> expected_count(static_cast<std::size_t>(g.producers),
                                                  std::vector<long>(static_cast<std::size_t>(g.channels), 0));
    for (int p = 0; p < g.producers; ++p)
      for (int t : g.plan[static_cast<std::size_t>(p)]) ++expected_count[static_cast<std::size_t>(p)][static_cast<std::size_t>(t)];
    std::vector<std::vector<long>> next(static_cast<std::size_t>(g.producers),
                                        std::vector<long>(static_cast<std::size_t>(g.channels), 0));
    for (std::size_t gi = 0; gi < received.size(); ++gi) {
      for (long v : received[gi]) {
        auto p = static_cast<std::size_t>(producer_of(v));
        auto c = static_cast<std::size_t>(channel_of(v));
        ASSERT_LT(p, next.size());
        ASSERT_LT(c, next[p].size());
        ASSERT_NE(std::find(g.groups[gi].begin(), g.groups[gi].end(), static_cast<int>(c)), g.groups[gi].end())
            << "a value arrived on a channel its consumer does not own";
        ASSERT_EQ(seq_of(v), next[p][c]) << "graph " << round << ": producer " << p << " channel " << c
                                         << " out of order or duplicated";
        ++next[p][c];
      }
    }
    EXPECT_EQ(next, expected_count) << "graph " << round << ": values lost";
  }
}

// mvars as one-place channels between random stages: a token passes through
// a ring of tasks K times; the sum checks that no put or take was lost.
TEST_P(SyncStress, MvarRing) {
  const int stages = 6, laps = static_cast<int>(scaled(500, 100));
  auto rt = std::make_unique<weft::runtime>(options());
  long result = 0;
  run_bounded(rt, [&] {
    std::vector<weft::mvar<long>> boxes(static_cast<std::size_t>(stages));
    weft::task_group g;
    for (int s = 1; s < stages; ++s)
      g.spawn([&, s] {
        for (int l = 0; l < laps; ++l) boxes[static_cast<std::size_t>((s + 1) % stages)].put(boxes[static_cast<std::size_t>(s)].take() + 1);
      });
    long token = 0;
    for (int l = 0; l < laps; ++l) {
      boxes[1].put(token);
      token = boxes[0].take() + 1;
    }
    g.sync();
    result = token;
  }, std::chrono::seconds(120));
  EXPECT_EQ(result, static_cast<long>(stages) * laps);
}

}  // namespace
