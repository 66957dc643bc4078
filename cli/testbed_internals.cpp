// testbed_internals.cpp: the subcommands of `tauplan testbed` that tauplan starts itself, not
// users: `fabric` (the link emulator, started by `up`), `agent` (mpirun's remote shell into a
// namespace), `rank` (sets TAUPLAN_TESTBED_HOST and execs a rank), `describe` (a platform's hosts
// for `validate --testbed`: SimGrid holds one platform per process), `compute-probe` and
// `message-probe` and `window-probe` (one process per MPI rank under `testbed run`, for `validate
// --testbed` and `calibrate --mpi`). Hidden from --help; their logic lives in study/ and
// exec/testbed/.
#include "cli/testbed_internals.hpp"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/verb.hpp"
#include "model/base/error.hpp"
#include "study/testbed/testbed_control.hpp"

namespace tauplan::cli {
namespace {

/// Everything after the options of a prefix_command subcommand, without a leading "--".
std::vector<std::string> rest_of(const CLI::App* app) {
  std::vector<std::string> rest = app->remaining();
  if (!rest.empty() && rest.front() == "--") rest.erase(rest.begin());
  return rest;
}

}  // namespace

void add_testbed_internals(CLI::App& testbed) {
  CLI::App* verb = &testbed;
  // Internal: a platform's hosts for `validate --testbed` (one platform per process in SimGrid).
  auto describe_request = std::make_shared<study::TestbedDescribeRequest>();
  CLI::App* describe = verb->add_subcommand("describe", "(internal) a platform's hosts as JSON");
  describe->group("");
  describe->add_option("platform", describe_request->platform)->required();
  describe->add_flag("--spec", describe_request->spec);
  describe->add_option("--hosts", describe_request->hosts)->delimiter(',');
  describe->add_option("--scale", describe_request->scale);
  describe->add_option("--prefix", describe_request->prefix);
  describe->callback([describe_request] { study::testbed_describe(*describe_request, std::cout); });

  // Internal: started by `validate --testbed` under `testbed run`, one process per rank.
  auto cp_job = std::make_shared<JobArgs>();
  auto cp = std::make_shared<study::ComputeProbeRequest>();
  CLI::App* compute = verb->add_subcommand("compute-probe", "(internal) compute of busy ranks");
  compute->group("");
  add_job_options(*compute, *cp_job);
  compute->add_option("--computing-ranks", cp->workers)->required();
  compute->add_option("--batches", cp->batches)->required()->delimiter(',');
  compute->add_option("--steps-per-round", cp->steps_per_round);
  compute->add_option("--probe-rounds", cp->rounds);
  compute->add_option("--wait", cp->wait_s);
  compute->add_option("--server-processing", cp->server_processing);
  compute->add_option("--probe-out", cp->out)->required();
  compute->callback([cp_job, cp] {
    study::ComputeProbeRequest request = *cp;
    request.job_file = cp_job->job_file;
    request.overrides = cp_job->overrides();
    study::testbed_compute_probe(request);
  });

  // Internal: started by `calibrate --mpi` under `testbed run`, one process per rank.
  auto probe_pairs = std::make_shared<std::string>();
  auto probe_sizes = std::make_shared<std::vector<double>>();
  auto probe_repeats = std::make_shared<int>(3);
  auto probe_waiters = std::make_shared<std::string>("spin");
  auto probe_out = std::make_shared<std::string>();
  CLI::App* probe = verb->add_subcommand("message-probe", "(internal) MPI message times");
  probe->group("");
  probe->add_option("--pairs", *probe_pairs)->required();
  probe->add_option("--sizes", *probe_sizes)->required()->delimiter(',');
  probe->add_option("--repeats", *probe_repeats);
  probe->add_option("--waiters", *probe_waiters);
  probe->add_option("--out", *probe_out)->required();
  probe->callback([probe_pairs, probe_sizes, probe_repeats, probe_waiters, probe_out] {
    study::testbed_message_probe(*probe_pairs, *probe_sizes, *probe_repeats, *probe_waiters,
                                 *probe_out);
  });

  // Internal: started by `calibrate --mpi --queued-window` under `testbed run`, one per rank.
  auto window_triples = std::make_shared<std::string>();
  auto window_bytes = std::make_shared<double>(1048576);
  auto window_messages = std::make_shared<int>(12);
  auto window_waiters = std::make_shared<std::string>("spin");
  auto window_out = std::make_shared<std::string>();
  CLI::App* window = verb->add_subcommand("window-probe", "(internal) MPI queued window");
  window->group("");
  window->add_option("--triples", *window_triples)->required();
  window->add_option("--bytes", *window_bytes);
  window->add_option("--messages", *window_messages);
  window->add_option("--waiters", *window_waiters);
  window->add_option("--out", *window_out)->required();
  window->callback([window_triples, window_bytes, window_messages, window_waiters, window_out] {
    study::testbed_window_probe(*window_triples, *window_bytes, *window_messages, *window_waiters,
                                *window_out);
  });

  // Internal: started by `up`, by mpirun and by `run`; not for users.
  auto fabric_prefix = std::make_shared<std::string>();
  auto fabric_options = std::make_shared<study::tb::FabricOptions>();
  auto fabric_ready = std::make_shared<int>(-1);
  CLI::App* fabric = verb->add_subcommand("fabric", "(internal) the link emulator process");
  fabric->group("");
  fabric->add_option("--prefix", *fabric_prefix)->required();
  fabric->add_option("--ready-fd", *fabric_ready);
  fabric->add_option("--ttl", fabric_options->ttl_s);
  fabric->add_option("--realtime-priority", fabric_options->realtime_priority);
  fabric->add_option("--early", fabric_options->early_s);
  fabric->callback([fabric_prefix, fabric_options, fabric_ready] {
    study::testbed_fabric(*fabric_prefix, *fabric_options, *fabric_ready);
  });

  auto agent_prefix = std::make_shared<std::string>();
  CLI::App* agent = verb->add_subcommand("agent", "(internal) mpirun's agent into a namespace");
  agent->group("");
  agent->prefix_command();
  agent->allow_extras();
  agent->add_option("--prefix", *agent_prefix)->required();
  agent->callback([agent, agent_prefix] { study::testbed_agent(*agent_prefix, rest_of(agent)); });

  auto rank_prefix = std::make_shared<std::string>();
  auto rank_command = std::make_shared<std::vector<std::string>>();
  CLI::App* rank = verb->add_subcommand("rank", "(internal) one MPI rank inside its namespace");
  rank->group("");
  rank->add_option("--prefix", *rank_prefix)->required();
  rank->add_option("command", *rank_command)->required();
  rank->callback([rank_prefix, rank_command] { study::testbed_rank(*rank_prefix, *rank_command); });
}

}  // namespace tauplan::cli
