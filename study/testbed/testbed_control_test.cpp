// testbed_control_test.cpp: the part of the emulated testbed (study/testbed/testbed_control.hpp)
// that needs no rights to create network namespaces: `testbed describe PLATFORM` lists the
// platform's hosts in its order with their role and node, as sim/'s loader reads them; a bad
// platform is one InputError naming the file. Linux only (elsewhere there is no testbed).
#include <catch2/catch.hpp>

#ifdef __linux__

#include <sstream>
#include <string>

#include "sim/platform_loader.hpp"
#include "study/common/study_test_support.hpp"
#include "study/testbed/testbed_control.hpp"

using namespace tauplan;
using nlohmann::json;

TEST_CASE("testbed describe: the platform's hosts in order, with role and node") {
  const std::string file = test::source_path("platforms/test-ps.xml");
  std::ostringstream out;
  study::TestbedDescribeRequest request;
  request.platform = file;
  study::testbed_describe(request, out);
  const json doc = json::parse(out.str());
  CHECK(doc.at("platform") == file);
  CHECK_FALSE(doc.contains("spec"));
  const model::Platform platform = sim::load_platform(file);
  const json& hosts = doc.at("hosts");
  REQUIRE(hosts.size() == platform.hosts.size());
  REQUIRE(hosts.size() == 5);
  size_t servers = 0;
  for (size_t i = 0; i < hosts.size(); ++i) {
    CAPTURE(i);
    const model::Host& h = platform.hosts[i];
    CHECK(hosts[i].at("name") == h.name);
    CHECK(hosts[i].at("node") == h.node);
    const bool server = h.role == model::HostRole::Server;
    CHECK(hosts[i].at("role") == (server ? "server" : "worker"));
    servers += server ? 1 : 0;
  }
  CHECK(servers == 1);  // ps0
  CHECK(hosts[0].at("name") == "h0");
  CHECK(hosts[0].at("node") == "n0");
  // With --spec: the testbed `testbed up` would make of the hosts asked for, nothing brought up.
  request.spec = true;
  request.hosts = {"h1", "ps0"};
  request.prefix = "tpq-";
  std::ostringstream with_spec;
  study::testbed_describe(request, with_spec);
  const study::tb::Spec spec = study::tb::spec_from_json(json::parse(with_spec.str()).at("spec"));
  REQUIRE(spec.hosts.size() == 2);
  CHECK(spec.hosts[0].name == "h1");
  CHECK(spec.hosts[1].name == "ps0");
  CHECK(spec.hosts[1].role == "server");
  CHECK(spec.hosts[0].netns.rfind("tpq-", 0) == 0);
}

TEST_CASE("testbed describe: a bad platform is one InputError naming the file") {
  const std::string file = test::source_path("tests/fixtures/bad/p-no-hosts.xml");
  std::ostringstream out;
  study::TestbedDescribeRequest request;
  request.platform = file;
  const std::string error = test::input_error([&] { study::testbed_describe(request, out); });
  CHECK(error.rfind(file + ": ", 0) == 0);
  CHECK(error.find('\n') == std::string::npos);
  CHECK(out.str().empty());
}

#endif
