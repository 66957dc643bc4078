// simgrid_xml.hpp: the one writer of SimGrid platform XML (version 4.1) in tauplan.
//
// Platforms that tauplan makes (a planning selection, study/plan/inventory.cpp; a calibrated
// machine, model/inputs/calibration.cpp; emulated testbeds) are described as plain structs and
// written here, so that every file has the same header, escaping and number format: every number
// with 17 significant digits (SimGrid reads back the same double) and its SimGrid unit (f, Bps, s).
// Elements come in the order SimGrid's DTD wants inside a zone: sub-zones, hosts, routers, links,
// routes, zone routes. What it leaves out: clusters, profiles, disks and the other elements
// tauplan does not write (model/inputs/simgrid_xml_check.hpp lists what tauplan reads).
#pragma once

#include <string>
#include <vector>

namespace tauplan::model::simgrid_xml {

struct Prop {
  std::string id;
  std::string value;
};

struct Host {
  std::string id;
  double speed_flops = 0;
  std::vector<Prop> props;
};

struct Link {
  std::string id;
  double bandwidth_Bps = 0;
  double latency_s = 0;
  std::string sharing_policy = "SPLITDUPLEX";  ///< SHARED, SPLITDUPLEX or FATPIPE
};

/// One link of a route; `direction` UP or DOWN for a SPLITDUPLEX link, empty otherwise.
struct LinkUse {
  std::string link;
  std::string direction;
};

/// <route src dst> between hosts or routers of one zone.
struct Route {
  std::string src;
  std::string dst;
  std::vector<LinkUse> links;
};

/// <zoneRoute src dst gw_src gw_dst> between two sub-zones of one zone.
struct ZoneRoute {
  std::string src;
  std::string dst;
  std::string gw_src;
  std::string gw_dst;
  std::vector<LinkUse> links;
};

struct Zone {
  std::string id = "world";
  std::string routing = "Floyd";  ///< Full, Floyd, Dijkstra ...
  std::vector<Zone> zones;
  std::vector<Host> hosts;
  std::vector<std::string> routers;
  std::vector<Link> links;
  std::vector<Route> routes;
  std::vector<ZoneRoute> zone_routes;
};

struct Platform {
  /// Text of the file's opening comment, written as given between "<!--\n" and "-->\n" (lines
  /// usually start with a space and end with a newline); "--" is written "- -" (XML forbids it
  /// inside a comment).
  std::string comment;
  Zone root;
};

/// The whole file: XML declaration, DOCTYPE, the comment, <platform version="4.1"> and the root
/// zone. Attribute values are escaped (& < > ").
std::string to_xml(const Platform& platform);

/// `text` with & < > " written as entities (attribute values; comments that quote user text).
std::string escape(const std::string& text);

/// A number as written: 17 significant digits ("1e+12", "0.5", "17179869184").
std::string number(double value);

}  // namespace tauplan::model::simgrid_xml
