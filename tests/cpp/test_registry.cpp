// The registry of axis values (strategies/registry.hpp): what registers itself survives the static
// link, the names the suite has always had are there, and everything that reads the registry (the
// default matrix, the presets, the JSON, --describe-registry, the CLI's `all`) agrees with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "bench/cli.hpp"
#include "bench_cli_support.hpp"
#include "cli_options_support.hpp"
#include "strategies/default_matrix.hpp"
#include "strategies/preset/preset.hpp"
#include "strategies/registry_json.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

using Captured = testing::StdoutResult;
Captured run_stdout(const std::string& args) { return testing::run_bench_stdout(args); }

template <class Registry>
void expect_registered(const Registry& r, std::initializer_list<const char*> names) {
  const auto have = r.names();
  for (const char* n : names)
    EXPECT_NE(std::find(have.begin(), have.end(), n), have.end())
        << "value '" << n << "' is not registered";
}

// A value that vanishes (a file dropped from the build, a registration lost to the static link)
// is caught here; a value added later does not need this list edited.
TEST(Registry, EveryValueTheSuiteHasAlwaysHadIsRegistered) {
  expect_registered(BindingRegistry::get(), {"data", "data-free"});
  expect_registered(OffloadRegistry::get(), {"none", "gpu-add", "cpu-add", "copy"});
  expect_registered(ModeRegistry::get(), {"flag", "shape"});
  expect_registered(DivisionRegistry::get(), {"end", "collective", "pre-post", "pre"});
  expect_registered(PresetRegistry::get(), {"fairscale", "fsdp1", "fsdp2", "zero3"});
}

template <class Registry>
void expect_described(const Registry& r) {
  std::set<std::string> seen;
  for (const auto& e : r.entries()) {
    EXPECT_TRUE(seen.insert(e.info.name).second) << e.info.name;
    EXPECT_FALSE(e.info.description.empty()) << e.info.name;
    EXPECT_EQ(e.info.description.find('\n'), std::string::npos) << e.info.name << ": one line";
    EXPECT_FALSE(e.info.follows.empty()) << e.info.name;
  }
}

TEST(Registry, EveryValueIsNamedOnceAndDescribed) {
  expect_described(BindingRegistry::get());
  expect_described(OffloadRegistry::get());
  expect_described(ModeRegistry::get());
  expect_described(DivisionRegistry::get());
}

TEST(Registry, AnUnknownValueNamesTheFlagAndTheRegisteredValues) {
  try {
    OffloadRegistry::get().make("gpu_add", {});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--offload: unknown value 'gpu_add'"), std::string::npos) << m;
    for (const std::string& n : OffloadRegistry::get().names())
      EXPECT_NE(m.find(n), std::string::npos) << m;
  }
  EXPECT_THROW(validate(StrategySpec{"data", "none", "flag", "nowhere"}), std::invalid_argument);
  EXPECT_THROW(preset("fsdp3"), std::invalid_argument);
}

TEST(Registry, AValueRegisteredTwiceIsRefused) {
  struct Twice final : Binding {
    void add(RankBackend&, Buffer&, const Buffer&, MemSpace, UnitGrad&,
             const AddSite&) const override {}
  };
  EXPECT_THROW(BindingRegistry::get().add({.name = "data", .description = "", .follows = ""},
                                          &detail::construct<Binding, Twice>),
               std::logic_error);
}

TEST(Registry, PresetsNameRegisteredValuesAndAreToldApart) {
  std::set<std::string> axes;  // binding, offload, mode, division: what PresetRegistry::of reads
  for (const PresetInfo& p : PresetRegistry::get().entries()) {
    EXPECT_NO_THROW(validate(p.spec)) << p.name;
    EXPECT_TRUE(axes.insert(p.spec.binding + "/" + p.spec.offload + "/" + p.spec.mode + "/" +
                            p.spec.division)
                    .second)
        << p.name << " repeats another preset's four axis values";
    EXPECT_EQ(PresetRegistry::get().of(p.spec), &p);
    // Another copy-in leaves the system it follows, so its lookahead and left-out schedules.
    for (const std::string& c : CopyInRegistry::get().names()) {
      StrategySpec s = p.spec;
      s.copy_in = c;
      EXPECT_EQ(PresetRegistry::get().of(s), &p) << p.name << " copy-in " << c;
      EXPECT_EQ(s.default_lookahead(), p.lookahead) << p.name << " copy-in " << c;
    }
    EXPECT_FALSE(p.follows.empty()) << p.name;
  }
}

TEST(DefaultMatrix, IsTheNamedListNotEveryValueAndItsNamesStay) {
  const DefaultMatrix& d = default_matrix();
  for (const auto& s : default_strategies()) EXPECT_NO_THROW(validate(s)) << s.name();
  EXPECT_EQ(default_strategies().size(),
            d.binding.size() * d.offload.size() * d.mode.size() * d.division.size());
  EXPECT_EQ(every_strategy().size(),
            BindingRegistry::get().names().size() * OffloadRegistry::get().names().size() *
                ModeRegistry::get().names().size() * DivisionRegistry::get().names().size());
  for (const auto& s : default_strategies())
    EXPECT_NE(std::find(every_strategy().begin(), every_strategy().end(), s),
              every_strategy().end());
  // The division axis at its default is left out of the name: the names of the first design stay.
  EXPECT_EQ(default_strategies().front().name(), "binding:data/offload:none/mode:flag");
  EXPECT_EQ((StrategySpec{"data", "none", "flag", "other"}).name(),
            "binding:data/offload:none/mode:flag/division:other");
}

// Bytes and peaks of every registered combination equal the model's: a new value that the model
// mispredicts fails here without any list being edited.
TEST(EveryStrategy, MeasuredBytesAndPeaksEqualTheModel) {
  auto be = make_host_backend({2, 1});
  const Layout layout = testing::make_layout({1, 1009, 3, 64});
  for (const StrategySpec& s : every_strategy())
    for (const char* modes : {"nnnS", "SSSS", "nSnS", "SnSS", "S"}) {
      for (const char* dtype : {"fp32-fp32-fp32", "bf16-bf16-fp32"}) {
        const Schedule sched = parse_schedule(modes, static_cast<int>(std::string(modes).size()));
        const CasePlan plan{layout, sched, s, parse_dtype_triple(dtype), GenMode::dyadic, 11, "t"};
        SCOPED_TRACE(s.name() + " " + modes + " " + dtype);
        const auto o = testing::run_two_steps(*be, plan);
        testing::expect_bytes_and_peaks_of_the_model(o);
        // Without offload, and with one sync a step, every strategy is correct (docs/DESIGN.md §3).
        const bool offloaded = OffloadRegistry::get().make(s.offload, {})->offloaded();
        if (!offloaded || sched.sync_count() == 1) {
          EXPECT_TRUE(o.correct) << o.max_rel_err;
        }
      }
    }
}

TEST(RegistryJson, CarriesEveryValuePresetAndScheduleRule) {
  const nlohmann::json r = registry_json();
  EXPECT_EQ(r.at("schema"), kRegistrySchema);
  std::vector<std::string> axes;
  for (const auto& a : r.at("axes")) axes.push_back(a.at("axis"));
  EXPECT_EQ(axes, (std::vector<std::string>{"binding", "offload", "mode", "division"}));
  const auto names_of = [&](const char* axis) {
    for (const auto& a : r.at("axes"))
      if (a.at("axis") == axis) {
        std::vector<std::string> n;
        for (const auto& v : a.at("values")) n.push_back(v.at("name"));
        return n;
      }
    return std::vector<std::string>{};
  };
  EXPECT_EQ(names_of("offload"), OffloadRegistry::get().names());
  EXPECT_EQ(names_of("mode"), ModeRegistry::get().names());
  EXPECT_EQ(names_of("division"), DivisionRegistry::get().names());
  EXPECT_EQ(r.at("axes")[3].at("named"), "unless_default");
  // The lookahead: every value, and named whenever --lookahead chose it (StrategySpec::name).
  EXPECT_EQ(r.at("lookahead").at("values").get<std::vector<std::string>>(),
            (std::vector<std::string>{"0", "1", "unbounded", "buckets"}));
  EXPECT_EQ(r.at("lookahead").at("named"), "when_given");
  EXPECT_EQ(r.at("axes")[1].at("default_matrix").get<std::vector<std::string>>(),
            default_matrix().offload);
  EXPECT_EQ(r.at("presets").size(), PresetRegistry::get().entries().size());
  // The schedule rule as the Python tools apply it gives what canonical_schedule builds, for every
  // K.
  for (const auto& c : r.at("canonical_schedules"))
    for (int k = c.at("min_k").get<int>(); k <= 64; ++k) {
      const auto& head = c.at("head");
      std::string m;
      for (int i = 0; i < k - 1; ++i) {
        if (head.at("kind") == "constant") {
          m += head.at("letter").get<std::string>();
        } else {
          const std::string at = head.at("at_k_minus_2");
          m += (k - 2 - i) % 2 == 0 ? at : (at == "n" ? "S" : "n");
        }
      }
      m += c.at("tail").get<std::string>();
      EXPECT_EQ(m, canonical_schedule(c.at("name").get<std::string>(), k).modes)
          << c.at("name") << " K " << k;
    }
}

TEST(RegistryJson, TheBinaryPrintsItAndWritesItIntoTheContext) {
  const auto r = run_stdout("--describe-registry");
  ASSERT_EQ(r.rc, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out), registry_json());  // the static link kept every value
  const std::string out =
      ::testing::TempDir() + "/registry_ctx_" + std::to_string(getpid()) + ".json";
  const auto run = testing::run_bench_cli(
      "", "--backend host --model uniform:1x64 --world-size 1 --preset zero3 "
          "--schedule sync --steps 1 --benchmark_out=" +
              out);
  ASSERT_EQ(run.rc, 0) << run.err;
  std::ifstream f(out);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(nlohmann::json::parse(j.at("context").at("registry").get<std::string>()),
            registry_json());
  EXPECT_EQ(run.err.find("registry: "), std::string::npos) << "the console header leaves it out";
  EXPECT_EQ(run_stdout("--backend host --model uniform:1x64 --world-size 1 --preset zero3 "
                       "--schedule sync --steps 1")
                .out.find("registry: "),
            std::string::npos);
  std::remove(out.c_str());
}

TEST(Cli, AllOnAnAxisIsEveryRegisteredValueAndHelpListsThem) {
  const MatrixAxes a =
      resolve_axes(testing::parsed({"--offload", "all", "--mode", "all", "--binding", "all"}),
                   "uniform:8x1M", 2, 8);
  EXPECT_EQ(a.strategies.size(),
            BindingRegistry::get().names().size() * OffloadRegistry::get().names().size() *
                ModeRegistry::get().names().size() * default_matrix().division.size());
  const auto help = run_stdout("--help");
  for (const auto& e : OffloadRegistry::get().entries()) {
    // A value outside the default matrix (the pipelined offloads) says so after its name.
    const bool in_default = std::ranges::count(default_matrix().offload, e.info.name) > 0;
    const std::string tag = in_default ? ": " : " (not in the default matrix): ";
    EXPECT_NE(help.out.find(e.info.name + tag + e.info.description), std::string::npos)
        << e.info.name;
    EXPECT_NE(help.out.find(e.info.follows), std::string::npos) << e.info.name;
  }
  for (const std::string& p : PresetRegistry::get().names())
    EXPECT_NE(help.out.find(p), std::string::npos);
}

}  // namespace
}  // namespace shardaccum

namespace shardaccum {
namespace {

// It describes the binary, not a run: other flags would be ignored, so they are refused; a stdout
// that cannot be written is a failed run (1), not bad input (2). --list alike.
TEST(RegistryJson, DescribeRegistryStandsAloneAndAFailedStdoutIsExitOne) {
  for (const char* other :
       {"--mode bogus", "--preset fsdp2", "--list", "--benchmark_out=/tmp/x.json"}) {
    const auto r = testing::run_bench_cli("", std::string("--describe-registry ") + other);
    EXPECT_EQ(r.rc, 2) << other << ": " << r.err;
    EXPECT_NE(r.err.find("--describe-registry takes no other flag"), std::string::npos) << r.err;
  }
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  EXPECT_EQ(run_stdout("--describe-registry >/dev/full").rc, 1);
  EXPECT_EQ(run_stdout("--backend host --list >/dev/full").rc, 1);
}

}  // namespace
}  // namespace shardaccum
