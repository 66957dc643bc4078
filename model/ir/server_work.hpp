// server_work.hpp: a parameter server's own processing, as work on its host.
//
// A server does more than move bytes: for every message it handles (a push received, a reply
// sent) it spends a fixed amount of CPU work, and for every byte of update it combines (sync
// `ps`: the mean of the K pushed shards) or applies (async-ps: one worker's gradient shard to the
// parameters) it spends work in proportion. Both are props of the server host in the platform
// file, in flop, executed at the host's speed so that a faster server host handles its load
// sooner: `server_flop_per_message` and `server_flop_per_byte` (platforms/README.md). On the
// testbed both are measured from the server ranks' own processing times and written by the
// calibration (seconds per message and per byte times the host's calibrated speed). A host
// without the props has no such work (the engines leave the server's processing out, as the
// bottleneck baseline always does). What it leaves out: the CPU cost of the MPI library moving
// the bytes (part of the network calibration's per-message latency), memory bandwidth shared with
// other processes on the host, and servers with several threads (a server handles one message
// at a time, as exec's do).
#pragma once

#include "model/inputs/platform.hpp"

namespace tauplan::model {

/// What a server host does per message and per byte of update, in flop at its speed.
struct ServerWork {
  double flop_per_message = 0;
  double flop_per_byte = 0;
  bool any() const { return flop_per_message > 0 || flop_per_byte > 0; }
};

/// The server work props of platform host `host` (0 when absent); an InputError naming the file
/// and the host's prop when one is not a number >= 0.
ServerWork server_work_of(const Platform& platform, int host);

/// One unit of a server's load: the messages it handles and the bytes of update it combines or
/// applies.
struct ServerLoad {
  double messages = 0;
  double bytes = 0;
};

/// One synchronous parameter-server call at one server: K pushes of `shard_bytes` received and
/// combined, K replies sent.
ServerLoad sync_server_load(int workers, double shard_bytes);
/// One asynchronous update at one server: the push received and applied, its reply sent.
ServerLoad async_update_load(double shard_bytes);

/// Flop the server host spends on `load`.
double server_flop(const ServerWork& work, const ServerLoad& load);
/// Seconds host `host` spends on `load` alone at its speed (0 without the props).
double server_seconds(const Platform& platform, int host, const ServerLoad& load);

}  // namespace tauplan::model
