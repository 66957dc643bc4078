// simgrid_xml_check.hpp: what tauplan checks in a SimGrid platform file before SimGrid reads it.
//
// SimGrid 3.32 aborts the process (xbt_assert, xbt_die: no exception to catch) on many bad
// platforms: a core count of 0, a pstate beyond the speed list, a link declared twice, an unknown
// routing, a torus or dragonfly whose parameters do not match its hosts, a profile file it cannot
// open, an <include>; and it accepts others that later abort a simulation or yield inf times: a
// bandwidth of 0, a negative latency or speed, unit-less numbers. This checker reads the XML
// itself (a small strict reader: elements, attributes, comments, the DOCTYPE; no DTD, no
// entities beyond the five XML ones and character references) and refuses, with an InputError
// naming the file, the element and the attribute, everything outside the subset it can vouch
// for:
//   - the file starts like a SimGrid platform: <!DOCTYPE platform ...> then <platform
//     version="4.1"> (4, 4.0 and 4.1 are accepted);
//   - elements platform, zone, cluster, host, router, link, route, zoneRoute, link_ctn, prop,
//     each with the attributes SimGrid documents for it; routing Full, Floyd, Dijkstra,
//     DijkstraCache or None; cluster topology FLAT, TORUS, FAT_TREE or DRAGONFLY with
//     parameters that match its number of hosts;
//   - numbers with SimGrid's units (model/base/units.hpp), within model/base/limits.hpp: speeds,
//   every
//     pstate's included, in [1 f, 1 Yf], bandwidths in [1 Bps, 1 EBps], latencies in [0, 1e6 s],
//     cores in [1, 65536], a pstate inside the speed list;
//   - ids non-empty and at most kMaxNameLength characters; host, router and zone names used
//     once; link names used once, cluster-made link names included;
//   - speed_file, bandwidth_file and latency_file profiles: relative paths to readable files of
//     "DATE VALUE" lines (dates non-decreasing, values in the attribute's range) with optional
//     PERIODICITY / LOOPAFTER lines; state_file is refused (a host turned off by SimGrid kills
//     the simulation's actors: use the job's `failures`);
//   - at most 65536 hosts, and at most 2048 netpoints in a Floyd or Full zone (Floyd computes
//     all routes in cubic time, Full holds a square table).
// What it leaves out: routes (SimGrid checks their ends and links and throws catchable errors;
// sim/ checks that every host pair a plan uses has one), props (sim/platform_loader.cpp reads
// those it knows), and the DTD's order of elements (SimGrid refuses a wrong order with a
// catchable ParseError).
#pragma once

#include <cstddef>
#include <string>

namespace tauplan::model {

/// Most hosts, routers and zones a Floyd or Full zone may hold (Floyd's cost is cubic in them,
/// Full's routes quadratic); writers switch to Dijkstra beyond it.
constexpr std::size_t kMaxDenseNetpoints = 2048;

/// What the checker found, for the loader.
struct PlatformXmlSummary {
  std::size_t hosts = 0;          ///< hosts, cluster hosts included
  bool link_profiles = false;     ///< a bandwidth_file or latency_file is used
  bool latency_profiles = false;  ///< a latency_file is used
  bool speed_profiles = false;    ///< a speed_file (or availability_file) is used
};

/// Checks `text`, the bytes of the platform file `file` (profile files are looked up as SimGrid
/// does: relative to the working folder, then to the platform file's folder). Throws
/// InputError(file, "<element id=...> attribute (line N)", expected, got) on the first problem.
PlatformXmlSummary check_simgrid_platform_xml(const std::string& text, const std::string& file);

}  // namespace tauplan::model
