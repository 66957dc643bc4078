// simgrid_xml.cpp: writing SimGrid platform XML (see simgrid_xml.hpp).
#include "model/inputs/simgrid_xml.hpp"

#include <fmt/format.h>

namespace tauplan::model::simgrid_xml {
namespace {

// XML forbids "--" inside a comment (and a comment ending in '-').
std::string comment_text(std::string text) {
  for (std::size_t at = text.find("--"); at != std::string::npos; at = text.find("--", at))
    text.replace(at, 2, "- -");
  if (!text.empty() && text.back() == '-') text += ' ';
  return text;
}

void write_links(std::string& out, const std::vector<LinkUse>& links) {
  for (const LinkUse& use : links) {
    out += "<link_ctn id=\"" + escape(use.link) + "\"";
    if (!use.direction.empty()) out += " direction=\"" + escape(use.direction) + "\"";
    out += "/>";
  }
}

void write_zone(std::string& out, const Zone& zone, const std::string& indent) {
  const std::string in = indent + "  ";
  out +=
      indent + "<zone id=\"" + escape(zone.id) + "\" routing=\"" + escape(zone.routing) + "\">\n";
  for (const Zone& child : zone.zones)
    write_zone(out, child, in);
  for (const Host& host : zone.hosts) {
    out += in + "<host id=\"" + escape(host.id) + "\" speed=\"" + number(host.speed_flops) + "f\"";
    if (host.props.empty()) {
      out += "/>\n";
      continue;
    }
    out += ">\n";
    for (const Prop& prop : host.props)
      out += in + "  <prop id=\"" + escape(prop.id) + "\" value=\"" + escape(prop.value) + "\"/>\n";
    out += in + "</host>\n";
  }
  for (const std::string& router : zone.routers)
    out += in + "<router id=\"" + escape(router) + "\"/>\n";
  for (const Link& link : zone.links)
    out += in + "<link id=\"" + escape(link.id) + "\" bandwidth=\"" + number(link.bandwidth_Bps) +
           "Bps\" latency=\"" + number(link.latency_s) + "s\" sharing_policy=\"" +
           escape(link.sharing_policy) + "\"/>\n";
  for (const Route& route : zone.routes) {
    out += in + "<route src=\"" + escape(route.src) + "\" dst=\"" + escape(route.dst) + "\">";
    write_links(out, route.links);
    out += "</route>\n";
  }
  for (const ZoneRoute& route : zone.zone_routes) {
    out += in + "<zoneRoute src=\"" + escape(route.src) + "\" dst=\"" + escape(route.dst) +
           "\" gw_src=\"" + escape(route.gw_src) + "\" gw_dst=\"" + escape(route.gw_dst) + "\">";
    write_links(out, route.links);
    out += "</zoneRoute>\n";
  }
  out += indent + "</zone>\n";
}

}  // namespace

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string number(double value) {
  return fmt::format("{:.17g}", value);
}

std::string to_xml(const Platform& platform) {
  std::string out =
      "<?xml version='1.0'?>\n"
      "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<!--\n" +
      comment_text(platform.comment) +
      "-->\n"
      "<platform version=\"4.1\">\n";
  write_zone(out, platform.root, "  ");
  out += "</platform>\n";
  return out;
}

}  // namespace tauplan::model::simgrid_xml
