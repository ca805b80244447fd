// Launcher environments (torchrun, Slurm, OpenMPI) read through a fake getenv.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "bench/launcher.hpp"
#include "bench/rendezvous.hpp"

namespace shardaccum {
namespace {

using Env = std::map<std::string, std::string>;

std::function<const char*(const char*)> fake(const Env& env) {
  return [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

/// The message of the std::invalid_argument that `f` throws ("" if it throws none).
template <class F>
std::string invalid_message(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Launcher, NoEnvironmentIsNullopt) {
  Env env{{"PATH", "/usr/bin"}};
  EXPECT_FALSE(launch_from_env(fake(env)).has_value());
}

TEST(Launcher, Torchrun) {
  Env env{{"RANK", "3"},
          {"WORLD_SIZE", "8"},
          {"LOCAL_RANK", "1"},
          {"MASTER_ADDR", "10.0.0.2"},
          {"MASTER_PORT", "29500"}};
  auto info = launch_from_env(fake(env));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->launcher, "torchrun");
  EXPECT_EQ(info->rank, 3);
  EXPECT_EQ(info->world_size, 8);
  EXPECT_EQ(info->local_rank, 1);
  EXPECT_EQ(info->master_addr, "10.0.0.2");
  EXPECT_EQ(info->master_port, 29500);
}

TEST(Launcher, Slurm) {
  Env env{{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "5"}};
  auto info = launch_from_env(fake(env));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->launcher, "slurm");
  EXPECT_EQ(info->rank, 5);
  EXPECT_EQ(info->world_size, 16);
  EXPECT_EQ(info->local_rank, 5);
  EXPECT_EQ(info->master_addr, "");
  EXPECT_EQ(info->master_port, 0);
}

TEST(Launcher, OpenMpi) {
  Env env{{"OMPI_COMM_WORLD_RANK", "0"},
          {"OMPI_COMM_WORLD_SIZE", "2"},
          {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
          {"MASTER_ADDR", "node1"},
          {"MASTER_PORT", "1234"}};
  auto info = launch_from_env(fake(env));
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->launcher, "openmpi");
  EXPECT_EQ(info->rank, 0);
  EXPECT_EQ(info->world_size, 2);
  EXPECT_EQ(info->master_addr, "node1");
  EXPECT_EQ(info->master_port, 1234);
}

TEST(Launcher, PrecedenceTorchrunThenOpenMpiThenSlurm) {
  Env all{{"RANK", "1"},
          {"WORLD_SIZE", "2"},
          {"LOCAL_RANK", "1"},
          {"SLURM_PROCID", "0"},
          {"SLURM_NTASKS", "1"},
          {"SLURM_LOCALID", "0"},
          {"OMPI_COMM_WORLD_RANK", "2"},
          {"OMPI_COMM_WORLD_SIZE", "4"},
          {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}};
  EXPECT_EQ(launch_from_env(fake(all))->launcher, "torchrun");
  // mpirun inside a batch job: its ranks inherit the job's SLURM_PROCID=0; OpenMPI's rank wins.
  Env slurm_mpi = all;
  slurm_mpi.erase("RANK");
  slurm_mpi.erase("WORLD_SIZE");
  slurm_mpi.erase("LOCAL_RANK");
  auto info = launch_from_env(fake(slurm_mpi));
  EXPECT_EQ(info->launcher, "openmpi");
  EXPECT_EQ(info->rank, 2);
  EXPECT_EQ(info->world_size, 4);
  Env slurm = slurm_mpi;
  slurm.erase("OMPI_COMM_WORLD_RANK");
  EXPECT_EQ(launch_from_env(fake(slurm))->launcher, "slurm");
}

TEST(Launcher, ResolveThreadsAutoEnv) {
  Env none;
  Env torch{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}};
  LaunchInfo t = resolve_launcher("threads", fake(torch));
  EXPECT_EQ(t.launcher, "threads");
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.world_size, 1);
  EXPECT_EQ(resolve_launcher("auto", fake(none)).launcher, "threads");
  EXPECT_EQ(resolve_launcher("auto", fake(torch)).launcher, "torchrun");
  EXPECT_EQ(resolve_launcher("env", fake(torch)).world_size, 2);
  // A batch script's world of 1 (SLURM_PROCID=0, SLURM_NTASKS=1) keeps auto threaded; env obeys.
  Env slurm1{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_LOCALID", "0"}};
  EXPECT_EQ(resolve_launcher("auto", fake(slurm1)).launcher, "threads");
  EXPECT_EQ(resolve_launcher("env", fake(slurm1)).launcher, "slurm");
  const std::string msg = invalid_message([&] { resolve_launcher("env", fake(none)); });
  EXPECT_NE(msg.find("--launcher env"), std::string::npos) << msg;
  for (const char* var :
       {"RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK"})
    EXPECT_NE(msg.find(var), std::string::npos) << var << " in: " << msg;
  EXPECT_NE(invalid_message([&] { resolve_launcher("mpi", fake(none)); }).find("--launcher"),
            std::string::npos);
}

TEST(Launcher, BadValuesNameTheVariable) {
  struct Case {
    Env env;
    std::string needle;
  };
  const Case cases[] = {
      {{{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}}, "RANK='4'"},
      {{{"RANK", "x1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}}, "RANK='x1'"},
      {{{"RANK", "1"}, {"WORLD_SIZE", "4 "}, {"LOCAL_RANK", "0"}}, "WORLD_SIZE='4 '"},
      {{{"RANK", "-1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}}, "RANK='-1'"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "0"}, {"LOCAL_RANK", "0"}}, "WORLD_SIZE='0'"},
      {{{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "-2"}}, "LOCAL_RANK='-2'"},
      {{{"RANK", "1"}, {"WORLD_SIZE", "4"}}, "LOCAL_RANK is not set"},
      {{{"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}}, "RANK is not set"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"MASTER_PORT", "70000"}},
       "MASTER_PORT='70000'"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"MASTER_PORT", "http"}},
       "MASTER_PORT='http'"},
      {{{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}}, "SLURM_PROCID='3'"},
      {{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "two"}, {"SLURM_LOCALID", "0"}},
       "SLURM_NTASKS='two'"},
      {{{"OMPI_COMM_WORLD_RANK", "0"},
        {"OMPI_COMM_WORLD_SIZE", "2"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "-1"}},
       "OMPI_COMM_WORLD_LOCAL_RANK='-1'"},
  };
  for (const Case& c : cases) {
    const std::string msg = invalid_message([&] { launch_from_env(fake(c.env)); });
    EXPECT_NE(msg.find(c.needle), std::string::npos)
        << "want '" << c.needle << "' in: '" << msg << "'";
    // auto does not hide a half-set or malformed environment.
    EXPECT_THROW(resolve_launcher("auto", fake(c.env)), std::invalid_argument) << c.needle;
  }
}

TEST(Launcher, RendezvousSpecParsing) {
  Env torch{{"RANK", "0"},
            {"WORLD_SIZE", "2"},
            {"LOCAL_RANK", "0"},
            {"MASTER_ADDR", "127.0.0.1"},
            {"MASTER_PORT", "29500"}};
  const LaunchInfo info = *launch_from_env(fake(torch));
  RendezvousSpec d = parse_rendezvous("", info);
  EXPECT_EQ(d.kind, RendezvousSpec::tcp);
  EXPECT_EQ(d.host, "127.0.0.1");
  EXPECT_EQ(d.port, 29500);
  // Under torchrun the agent's store holds MASTER_PORT: the default moves to the next port.
  Env agent{{"RANK", "1"},
            {"WORLD_SIZE", "2"},
            {"LOCAL_RANK", "1"},
            {"MASTER_ADDR", "10.0.0.1"},
            {"MASTER_PORT", "29500"},
            {"TORCHELASTIC_USE_AGENT_STORE", "True"}};
  const RendezvousSpec a = parse_rendezvous("", *launch_from_env(fake(agent)));
  EXPECT_EQ(a.host, "10.0.0.1");
  EXPECT_EQ(a.port, 29501);
  RendezvousSpec f = parse_rendezvous("file:/shared/job42/nccl_id", info);
  EXPECT_EQ(f.kind, RendezvousSpec::file);
  EXPECT_EQ(f.path, "/shared/job42/nccl_id");
  RendezvousSpec t = parse_rendezvous("tcp:node7:4000", info);
  EXPECT_EQ(t.kind, RendezvousSpec::tcp);
  EXPECT_EQ(t.host, "node7");
  EXPECT_EQ(t.port, 4000);
  EXPECT_EQ(parse_rendezvous("tcp:[::1]:4000", info).host, "::1");
  for (const char* bad : {"file:", "tcp:node7", "tcp::4000", "tcp:node7:0", "tcp:node7:65536",
                          "tcp:h:x", "udp:h:1", "nccl_id"})
    EXPECT_NE(invalid_message([&] { parse_rendezvous(bad, info); }).find("--rendezvous"),
              std::string::npos)
        << bad;
}

TEST(Launcher, TcpDefaultNeedsMasterAddrAndPort) {
  Env no_port{
      {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "0"}, {"MASTER_ADDR", "127.0.0.1"}};
  const std::string m1 =
      invalid_message([&] { parse_rendezvous("", *launch_from_env(fake(no_port))); });
  EXPECT_NE(m1.find("MASTER_PORT"), std::string::npos) << m1;
  EXPECT_NE(m1.find("--rendezvous"), std::string::npos) << m1;
  Env slurm{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}};
  const std::string m2 =
      invalid_message([&] { parse_rendezvous("", *launch_from_env(fake(slurm))); });
  EXPECT_NE(m2.find("MASTER_ADDR"), std::string::npos) << m2;
}

}  // namespace
}  // namespace shardaccum
