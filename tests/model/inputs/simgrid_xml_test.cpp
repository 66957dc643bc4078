// simgrid_xml_test.cpp: the SimGrid XML writer and the checker that reads platforms before
// SimGrid: the writer's output passes the checker, every shipped platform passes it, and what
// the checker refuses it names by line, element and attribute.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/base/error.hpp"
#include "model/inputs/simgrid_xml.hpp"
#include "model/inputs/simgrid_xml_check.hpp"

using namespace tauplan;
namespace sx = model::simgrid_xml;

namespace {

sx::Platform two_hosts() {
  sx::Platform p;
  p.comment = " two hosts -- and a dash pair\n";
  p.root.hosts = {{"a", 1e12, {{"gpu_model", "K80"}, {"note", "x < y & \"z\""}}}, {"b", 2e12, {}}};
  p.root.routers = {"r"};
  p.root.links = {{"la", 1e9, 1e-6, "SPLITDUPLEX"}, {"lb", 2.5e9, 0, "SPLITDUPLEX"}};
  p.root.routes = {{"a", "r", {{"la", "UP"}}}, {"b", "r", {{"lb", "UP"}}}};
  return p;
}

std::string check_error(const std::string& xml) {
  try {
    model::check_simgrid_platform_xml(xml, "p.xml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("simgrid xml: the writer's form, escaping and numbers") {
  const std::string xml = sx::to_xml(two_hosts());
  CHECK(xml.rfind("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM", 0) == 0);
  CHECK(xml.find(" two hosts - - and a dash pair\n-->") != std::string::npos);
  CHECK(xml.find("<host id=\"a\" speed=\"1000000000000f\">") != std::string::npos);
  CHECK(xml.find("<prop id=\"note\" value=\"x &lt; y &amp; &quot;z&quot;\"/>") !=
        std::string::npos);
  CHECK(xml.find("<host id=\"b\" speed=\"2000000000000f\"/>") != std::string::npos);
  CHECK(xml.find("<link id=\"la\" bandwidth=\"1000000000Bps\" latency=\"9.9999999999999995e-07s\" "
                 "sharing_policy=\"SPLITDUPLEX\"/>") != std::string::npos);
  CHECK(xml.find("<route src=\"a\" dst=\"r\"><link_ctn id=\"la\" direction=\"UP\"/></route>") !=
        std::string::npos);
  // Hosts before routers before links before routes (SimGrid's DTD order).
  CHECK(xml.find("<host id=\"b\"") < xml.find("<router"));
  CHECK(xml.find("<router") < xml.find("<link id"));
  CHECK(xml.find("<link id=\"lb\"") < xml.find("<route src"));
  CHECK(sx::number(0.1) == "0.10000000000000001");  // 17 digits: SimGrid reads the same double
}

TEST_CASE("simgrid xml: the writer's output passes the checker") {
  const auto summary = model::check_simgrid_platform_xml(sx::to_xml(two_hosts()), "p.xml");
  CHECK(summary.hosts == 2);
  sx::Platform nested;
  nested.root.routing = "Full";
  sx::Zone left;
  left.id = "left";
  left.hosts = {{"a", 1e9, {}}};
  left.routers = {"gl"};
  left.links = {{"l", 1e9, 0, "SHARED"}};
  left.routes = {{"a", "gl", {{"l", ""}}}};
  sx::Zone right = left;
  right.id = "right";
  right.hosts = {{"b", 1e9, {}}};
  right.routers = {"gr"};
  right.links = {{"m", 1e9, 0, "SHARED"}};
  right.routes = {{"b", "gr", {{"m", ""}}}};
  nested.root.zones = {left, right};
  nested.root.links = {{"wan", 1e8, 1e-3, "SHARED"}};
  nested.root.zone_routes = {{"left", "right", "gl", "gr", {{"wan", ""}}}};
  CHECK(model::check_simgrid_platform_xml(sx::to_xml(nested), "n.xml").hosts == 2);
}

TEST_CASE("simgrid xml: every shipped platform passes the checker") {
  int checked = 0;
  for (const char* folder : {"/platforms", "/tests/sim/fixtures"})
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(TAUPLAN_SOURCE_DIR) + folder)) {
      if (entry.path().extension() != ".xml") continue;
      const std::string name = entry.path().filename().string();
      if (name == "malformed.xml") continue;  // the loader's test of a broken file
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      INFO(entry.path());
      CHECK_NOTHROW(model::check_simgrid_platform_xml(text.str(), entry.path().string()));
      ++checked;
    }
  CHECK(checked >= 13);
}

TEST_CASE("simgrid xml: the checker names line, element and attribute") {
  std::string xml = sx::to_xml(two_hosts());
  std::string bad = xml;
  bad.replace(bad.find("bandwidth=\"1000000000Bps\""), 25, "bandwidth=\"0Bps\"");
  CHECK(check_error(bad).find("p.xml: line ") == 0);
  CHECK(check_error(bad).find("<link id=\"la\"> bandwidth: expected a value in [1, 1e+18] B/s, "
                              "got '0Bps'") != std::string::npos);
  bad = xml;
  bad.replace(bad.find("<!DOCTYPE"), bad.find("\n", bad.find("<!DOCTYPE")) - bad.find("<!DOCTYPE"),
              "");
  CHECK(check_error(bad).find("DOCTYPE: expected <!DOCTYPE platform") != std::string::npos);
  CHECK(check_error("<platform").find("p.xml: line 1: DOCTYPE") == 0);
  CHECK(check_error("").find("got an empty file") != std::string::npos);
}
