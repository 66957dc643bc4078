// platform_loader_test.cpp: SimGrid XML -> model::Platform, errors, one platform per process.
#include <catch2/catch.hpp>

#include "sim/platform_loader.hpp"
#include "tests/sim/sim_test_support.hpp"

using namespace tauplan;

TEST_CASE("the loader converts hosts, props, links and routes") {
  const auto result = test::in_child([] {
    const model::Platform p = sim::load_platform(test::fixture("two_nodes.xml"));
    nlohmann::json out;
    for (const auto& h : p.hosts)
      out["hosts"].push_back({h.name, h.speed_flops, h.gpu_model, h.gpu_memory_bytes, h.node,
                              h.role == model::HostRole::Server ? "server" : "worker"});
    const int a = p.find_host("n0-gpu1");
    const int b = p.find_host("n1-gpu3");
    const model::Route& r = p.route(a, b);
    double latency = 0;
    for (int l : r.links)
      latency += p.links[static_cast<size_t>(l)].latency_s;
    out["route"] = {r.latency_s, r.bandwidth_Bps, latency, r.links.size()};
    out["workers"] = p.worker_hosts().size();
    out["servers"] = p.server_hosts().size();
    out["hash"] = p.source_hash;
    out["config"] = sim::engine_config();
    out["model"] = sim::network_model();
    // Loading the same file again returns the same platform.
    out["again"] = sim::load_platform(test::fixture("two_nodes.xml")).hosts.size();
    return out.dump();
  });
  REQUIRE(result.kind == "ok");
  const auto out = result.json();
  const auto& hosts = out["hosts"];
  REQUIRE(hosts.size() == 9);
  // Natural order, not SimGrid's lexicographic one.
  CHECK(hosts[0][0] == "n0-gpu0");
  CHECK(hosts[3][0] == "n0-gpu3");
  CHECK(hosts[4][0] == "n1-gpu0");
  CHECK(hosts[8][0] == "ps-0");
  CHECK(hosts[0][1].get<double>() == Approx(1e14));
  CHECK(hosts[0][2] == "V100-SXM2-16GB");
  CHECK(hosts[0][3].get<double>() == Approx(32e9));
  CHECK(hosts[5][4] == "n1");
  CHECK(hosts[8][5] == "server");
  CHECK(hosts[8][4] == "ps-0");  // no node prop: the host is its own node
  CHECK(out["workers"] == 8);
  CHECK(out["servers"] == 1);
  // n0-gpu1 -> n1-gpu3: up link (1 us), fabric (0 s), down link (1 us); narrowest 25 GB/s.
  CHECK(out["route"][0].get<double>() == Approx(2e-6).epsilon(1e-12));
  CHECK(out["route"][0].get<double>() == Approx(out["route"][2].get<double>()).epsilon(1e-12));
  CHECK(out["route"][1].get<double>() == Approx(25e9));
  CHECK(out["route"][3] == 3);
  CHECK(out["hash"].get<std::string>().size() == 16);
  CHECK(out["model"] == "CM02");
  CHECK(out["config"]["network/crosstraffic"] == "0");
  CHECK(out["config"]["network/TCP-gamma"] == "1000000000000");
  CHECK(out["again"] == 9);
}

TEST_CASE("LV08 turns crosstraffic on unless asked otherwise, and is recorded") {
  const auto result = test::in_child([] {
    sim::NetworkOptions network;
    network.model = "LV08";
    sim::load_platform(test::fixture("two_nodes.xml"), network);
    nlohmann::json out = sim::engine_config();
    return out.dump();
  });
  REQUIRE(result.kind == "ok");
  const auto out = result.json();
  CHECK(out["network/model"] == "LV08");
  CHECK(out["network/crosstraffic"] == "1");
}

TEST_CASE("bad platforms are one-line input errors naming the file and key") {
  struct Case {
    const char* file;
    const char* needle;
  };
  const Case cases[] = {
      {"does_not_exist.xml", "no such file"},
      {"malformed.xml", "line 7: </platform>: expected </zone>"},
      {"bad_prop.xml", "host n0-gpu0 prop gpu_memory_bytes"},
      {"bad_role.xml", "host n0-gpu0 prop role: expected worker or server, got \"boss\""},
  };
  for (const Case& c : cases) {
    const std::string path = test::fixture(c.file);
    const auto result = test::in_child([&] {
      sim::load_platform(path);
      return std::string("loaded");
    });
    INFO(c.file << ": " << result.text);
    CHECK(result.kind == "InputError");
    CHECK(result.text.find(path) == 0);
    CHECK(result.text.find(c.needle) != std::string::npos);
    CHECK(result.text.find('\n') == std::string::npos);
  }
}

TEST_CASE("one platform and one network model per process") {
  const auto other = test::in_child([] {
    sim::load_platform(test::fixture("two_nodes.xml"));
    sim::load_platform(test::fixture("islands.xml"));
    return std::string("loaded both");
  });
  CHECK(other.kind == "InputError");
  CHECK(other.text.find("one platform per process") != std::string::npos);

  const auto model_change = test::in_child([] {
    sim::load_platform(test::fixture("two_nodes.xml"), "CM02");
    sim::load_platform(test::fixture("two_nodes.xml"), "LV08");
    return std::string("loaded both");
  });
  CHECK(model_change.kind == "InputError");
  CHECK(model_change.text.find("network_model") != std::string::npos);

  const auto unknown = test::in_child([] {
    sim::load_platform(test::fixture("two_nodes.xml"), "ns-3");
    return std::string("loaded");
  });
  CHECK(unknown.kind == "InputError");
  CHECK(unknown.text.find("CM02 or LV08") != std::string::npos);
}
