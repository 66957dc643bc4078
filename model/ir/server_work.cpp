// server_work.cpp: a parameter server's own processing (see server_work.hpp).
#include "model/ir/server_work.hpp"

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"

namespace tauplan::model {
namespace {

double server_prop(const Platform& platform, const Host& host, const char* name) {
  const auto it = host.properties.find(name);
  if (it == host.properties.end()) return 0;
  double value = -1;
  if (!parse_prop_number(it->second, value) || !(value >= 0 && value <= kMaxFlopPerSample))
    throw InputError(platform.source_file, "host " + host.name + " prop " + name,
                     fmt::format("a number of flop in [0, {:g}]", kMaxFlopPerSample),
                     "'" + it->second + "'");
  return value;
}

}  // namespace

ServerWork server_work_of(const Platform& platform, int host) {
  const Host& h = platform.hosts.at(static_cast<size_t>(host));
  ServerWork work;
  work.flop_per_message = server_prop(platform, h, "server_flop_per_message");
  work.flop_per_byte = server_prop(platform, h, "server_flop_per_byte");
  return work;
}

ServerLoad sync_server_load(int workers, double shard_bytes) {
  const auto k = static_cast<double>(workers);
  return ServerLoad{2 * k, k * shard_bytes};
}

ServerLoad async_update_load(double shard_bytes) {
  return ServerLoad{2, shard_bytes};
}

double server_flop(const ServerWork& work, const ServerLoad& load) {
  return work.flop_per_message * load.messages + work.flop_per_byte * load.bytes;
}

double server_seconds(const Platform& platform, int host, const ServerLoad& load) {
  const ServerWork work = server_work_of(platform, host);
  if (!work.any()) return 0;
  const Host& h = platform.hosts.at(static_cast<size_t>(host));
  if (!(h.speed_flops > 0))
    throw InputError(platform.source_file, "host " + h.name + " speed",
                     "a processing speed > 0 (flop/s) for a server with server_flop_* props",
                     fmt::format("{:g}", h.speed_flops));
  return server_flop(work, load) / h.speed_flops;
}

}  // namespace tauplan::model
