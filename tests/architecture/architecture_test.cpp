// architecture_test.cpp: the rules of the source tree that the compiler cannot see.
//
// Layering (DESIGN.md): model <- sim, model <- exec, {model, sim, exec} <- study <- cli, and only
// sim/ includes SimGrid (its headers sit in /usr/include, so the linker alone cannot enforce
// it). Names: a strategy's or a collective algorithm's name appears as a string literal only
// in the files that carry that name (its own files: strategy_<name>.cpp, collective_<name>.cpp,
// lower_<name>.cpp, ...), never compared elsewhere. Extending: every registered collective has
// its analytic cost and its SimGrid lowering as files of its own, every strategy its file, as
// README "Extending" says; plans are built by strategies only; verb files stay small. Each rule
// is also run on a planted violation, so a checker that finds nothing cannot pass.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "model/collective.hpp"
#include "model/platform.hpp"
#include "model/strategy.hpp"
#include "sim/collective_lowering.hpp"
#if TAUPLAN_HAVE_MPI
#include "exec/mpi_algorithm.hpp"
#endif
#include "study/engines.hpp"

#ifndef TAUPLAN_SOURCE_DIR
#define TAUPLAN_SOURCE_DIR "."
#endif

namespace fs = std::filesystem;

namespace {

const fs::path kRoot(TAUPLAN_SOURCE_DIR);

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

bool is_source(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".cpp" || ext == ".hpp" || ext == ".cu" || ext == ".h";
}

/// Each item on a line of its own, indented: the body of a failure message.
std::string indented(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items)
    text += "  " + item + "\n";
  return text;
}

/// Source files under root/dir, relative to root, sorted.
std::vector<fs::path> sources(const fs::path& root, const std::string& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(root / dir)) return out;
  for (const auto& entry : fs::recursive_directory_iterator(root / dir))
    if (entry.is_regular_file() && is_source(entry.path()))
      out.push_back(fs::relative(entry.path(), root));
  std::sort(out.begin(), out.end());
  return out;
}

/// The code of a file without comments (string literals kept).
std::string without_comments(const std::string& text) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size())
        out += text[++i];
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
      out += c;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n')
        ++i;
      out += '\n';
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      i += 2;
      while (i + 1 < text.size() && !(text[i] == '*' && text[i + 1] == '/'))
        ++i;
      ++i;
    } else {
      out += c;
    }
  }
  return out;
}

struct Layer {
  std::string dir;
  std::vector<std::string> forbidden;  ///< include prefixes
};

/// "FILE: #include <...>" for every include a layer may not make.
std::vector<std::string> layering_violations(const fs::path& root) {
  const std::vector<std::string> simgrid = {"simgrid/", "xbt/", "xbt.h", "smpi/"};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const std::vector<Layer> layers = {
      {"model", with({"sim/", "exec/", "study/", "cli/"}, simgrid)},
      {"exec", with({"sim/", "study/", "cli/"}, simgrid)},
      {"sim", {"exec/", "study/", "cli/"}},
      {"study", {"cli/"}},
      // The verbs reach the engines and the testbed through study/ only.
      {"cli", with({"sim/", "exec/"}, simgrid)},
      {"bench", {"cli/"}},
  };
  const std::regex include(R"(#\s*include\s*[<"]([^>"]+)[>"])");
  std::vector<std::string> violations;
  for (const Layer& layer : layers)
    for (const fs::path& file : sources(root, layer.dir)) {
      const std::string code = without_comments(read(root / file));
      for (std::sregex_iterator it(code.begin(), code.end(), include), end; it != end; ++it) {
        const std::string target = (*it)[1];
        for (const std::string& prefix : layer.forbidden)
          if (target.rfind(prefix, 0) == 0)
            violations.push_back(file.string() + ": #include " + target);
      }
    }
  return violations;
}

/// "FILE:LINE: SIGNATURE (N lines)" for every function in `dirs` whose definition, from the first
/// line of its signature to its closing brace, is longer than `limit` lines. A definition starts
/// at a line of indentation 0-4 (namespace scope or a class member) and its body ends at the
/// first `}` of the same indentation; lambdas, control statements and initialisers are not
/// definitions.
std::vector<std::string> long_functions(const fs::path& root, const std::vector<std::string>& dirs,
                                        long limit) {
  const std::regex opens_body(
      R"(\)\s*(const\s*)?(override\s*)?(noexcept\s*)?(->\s*[\w:<>, ]+)?\{\s*$)");
  const std::regex starts_definition(R"(^ {0,4}[A-Za-z_~][^=;]*\()");
  const std::regex statement(R"(^\s*(if|for|while|switch|else|do|return|case|namespace)\b)");
  std::vector<std::string> found;
  for (const std::string& dir : dirs)
    for (const fs::path& file : sources(root, dir)) {
      std::vector<std::string> lines;
      std::istringstream in(without_comments(read(root / file)));
      for (std::string line; std::getline(in, line);)
        lines.push_back(line);
      for (size_t i = 0; i < lines.size(); ++i) {
        if (!std::regex_search(lines[i], opens_body) || std::regex_search(lines[i], statement))
          continue;
        size_t first = i;
        while (first > 0 && i - first < 12 && !std::regex_search(lines[first], starts_definition))
          --first;
        if (!std::regex_search(lines[first], starts_definition) ||
            std::regex_search(lines[first], statement))
          continue;
        const std::string indent = lines[first].substr(0, lines[first].find_first_not_of(' '));
        size_t last = i + 1;
        while (last < lines.size() && lines[last].rfind(indent + "}", 0) != 0)
          ++last;
        const auto length = static_cast<long>(last - first + 1);
        if (last < lines.size() && length > limit)
          found.push_back(file.string() + ":" + std::to_string(first + 1) + ": " +
                          lines[first].substr(indent.size(), 60) + " (" + std::to_string(length) +
                          " lines)");
        i = last;
      }
    }
  return found;
}

/// "FILE:LINE: "NAME"" for every literal of a registered name outside the files carrying it.
std::vector<std::string> name_violations(const fs::path& root,
                                         const std::vector<std::string>& names) {
  std::vector<std::string> violations;
  for (const char* dir : {"model", "sim", "exec", "study", "cli"})
    for (const fs::path& file : sources(root, dir)) {
      const std::string stem = file.stem().string();
      const std::string code = without_comments(read(root / file));
      for (const std::string& name : names) {
        std::string as_file = name;
        std::replace(as_file.begin(), as_file.end(), '-', '_');
        if (stem.find(as_file) != std::string::npos) continue;  // its own file
        // The same word meaning something else: "ps" is the picosecond in the unit table.
        if (file == fs::path("model/units.cpp") && name == "ps") continue;
        const std::string literal = "\"" + name + "\"";
        for (size_t at = code.find(literal); at != std::string::npos;
             at = code.find(literal, at + 1)) {
          const auto line = std::count(code.begin(), code.begin() + static_cast<long>(at), '\n');
          violations.push_back(file.string() + ":" + std::to_string(line + 1) + ": " + literal);
        }
      }
    }
  return violations;
}

std::vector<std::string> registered_names() {
  std::vector<std::string> names = tauplan::model::strategy_names();
  for (const auto& n : tauplan::model::collective_algorithm_names())
    names.push_back(n);
  return names;
}

/// A scratch tree under the build's temporary folder, removed at the end of the test.
struct ScratchTree {
  fs::path root = fs::temp_directory_path() / ("tauplan-arch-" + std::to_string(::getpid()));
  ScratchTree() { fs::create_directories(root); }
  ~ScratchTree() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void write(const std::string& file, const std::string& text) const {
    fs::create_directories((root / file).parent_path());
    std::ofstream(root / file) << text;
  }
};

}  // namespace

TEST_CASE("layering: every folder includes nothing above it, SimGrid only in sim, cli via study") {
  const auto violations = layering_violations(kRoot);
  INFO("forbidden includes:\n" << indented(violations));
  CHECK(violations.empty());
  CHECK(!sources(kRoot, "model").empty());  // the scan saw the tree
}

TEST_CASE("layering: a forbidden include planted in model/ and exec/ is found") {
  ScratchTree tree;
  tree.write("model/bad.cpp",
             "// bad.cpp\n#include <simgrid/s4u.hpp>\n#include \"sim/simulator.hpp\"\n");
  tree.write("exec/bad.hpp", "#include \"cli/verb.hpp\"\n// #include \"sim/commented_out.hpp\"\n");
  tree.write("study/fine.cpp", "#include \"sim/simulator.hpp\"\n#include \"exec/trainer.hpp\"\n");
  tree.write("cli/verb_bad.cpp",
             "#include \"study/sweep.hpp\"\n#include \"exec/testbed/fabric.hpp\"\n");
  const auto violations = layering_violations(tree.root);
  CHECK(violations ==
        std::vector<std::string>{"model/bad.cpp: #include simgrid/s4u.hpp",
                                 "model/bad.cpp: #include sim/simulator.hpp",
                                 "exec/bad.hpp: #include cli/verb.hpp",
                                 "cli/verb_bad.cpp: #include exec/testbed/fabric.hpp"});
}

TEST_CASE("functions: none outside tests is longer than 120 lines") {
  const auto found = long_functions(kRoot, {"model", "sim", "exec", "study", "cli", "bench"}, 120);
  INFO("functions over 120 lines:\n" << indented(found));
  CHECK(found.empty());
}

TEST_CASE("functions: a planted long function is found, a long lambda or table is not") {
  ScratchTree tree;
  std::string body;
  for (int i = 0; i < 125; ++i)
    body += "  x += " + std::to_string(i) + ";\n";
  tree.write(
      "model/long.cpp",
      "int short_one(int x) {\n  return x;\n}\n\nint long_one(int x,\n             int y) {\n" +
          body + "  return x + y;\n}\n\nnamespace {\nstruct S {\n  int member(int x) const {\n" +
          body + "  return x;\n  }\n};\n}  // namespace\n");
  tree.write("study/lambda.cpp", "auto f = [](int x) {\n" + body +
                                     "  return x;\n};\n"
                                     "const std::vector<int> table = {\n" +
                                     body + "};\n");
  const auto found = long_functions(tree.root, {"model", "study"}, 120);
  REQUIRE(found.size() == 2);
  CHECK(found[0] == "model/long.cpp:5: int long_one(int x, (129 lines)");
  CHECK(found[1] == "model/long.cpp:137: int member(int x) const { (128 lines)");
}

TEST_CASE("names: no strategy or collective name is a literal outside the files that carry it") {
  const auto violations = name_violations(kRoot, registered_names());
  INFO("name literals:\n" << indented(violations));
  CHECK(violations.empty());
}

TEST_CASE("names: a planted comparison with a strategy or collective name is found") {
  ScratchTree tree;
  tree.write("model/planner_like.cpp",
             "bool f(const std::string& s) { return s == \"sync\"; }  // \"ring\" in a comment\n"
             "const char* c = \"ps\";\n");
  tree.write("model/strategy_sync.cpp", "const char* name() { return \"sync\"; }\n");
  const auto violations = name_violations(tree.root, {"sync", "ring", "ps"});
  REQUIRE(violations.size() == 2);
  CHECK(violations[0] == "model/planner_like.cpp:1: \"sync\"");
  CHECK(violations[1] == "model/planner_like.cpp:2: \"ps\"");
}

TEST_CASE("extending: every collective has its cost and its lowering, each in a file of its own") {
  const auto algorithms = tauplan::model::collective_algorithm_names();
  REQUIRE(!algorithms.empty());
  const auto lowerings = tauplan::sim::collective_lowering_names();
  CHECK(std::set<std::string>(algorithms.begin(), algorithms.end()) ==
        std::set<std::string>(lowerings.begin(), lowerings.end()));
  for (std::string name : algorithms) {
    CHECK_NOTHROW(tauplan::sim::collective_lowering(name));
    std::replace(name.begin(), name.end(), '-', '_');
    CHECK(fs::is_regular_file(kRoot / "model" / ("collective_" + name + ".cpp")));
    CHECK(fs::is_regular_file(kRoot / "sim" / ("lower_" + name + ".cpp")));
  }
#if TAUPLAN_HAVE_MPI
  // The MPI communicator executes every algorithm for real (exec/mpi_<name>.cpp).
  const auto executed = tauplan::exec::mpi_algorithm_names();
  CHECK(std::set<std::string>(algorithms.begin(), algorithms.end()) ==
        std::set<std::string>(executed.begin(), executed.end()));
  for (std::string name : executed) {
    std::replace(name.begin(), name.end(), '-', '_');
    CHECK(fs::is_regular_file(kRoot / "exec" / ("mpi_" + name + ".cpp")));
  }
#endif
}

TEST_CASE("extending: every strategy is a file of its own, one baseline among them") {
  int baselines = 0;
  for (std::string name : tauplan::model::strategy_names()) {
    baselines += tauplan::model::strategy(name).is_baseline() ? 1 : 0;
    std::replace(name.begin(), name.end(), '-', '_');
    CHECK(fs::is_regular_file(kRoot / "model" / ("strategy_" + name + ".cpp")));
  }
  CHECK(baselines == 1);
}

TEST_CASE("extending: README's Extending section names the files the registries need") {
  const std::string readme = read(kRoot / "README.md");
  const auto at = readme.find("## Extending");
  REQUIRE(at != std::string::npos);
  const std::string section = readme.substr(at, readme.find("\n## ", at + 1) - at);
  for (const char* path :
       {"model/collective_<name>.cpp", "sim/lower_<name>.cpp", "model/strategy_<name>.cpp",
        "model/collective.cpp", "sim/collective_lowering.cpp", "model/strategy.cpp",
        "exec/mpi_<name>.cpp", "exec/mpi_algorithm.cpp"})
    CHECK(section.find(path) != std::string::npos);
}

TEST_CASE(
    "props: platforms/README.md's props table and platform_properties() list the same props") {
  const std::string readme = read(kRoot / "platforms" / "README.md");
  const auto at = readme.find("| prop | on | meaning |");
  REQUIRE(at != std::string::npos);
  const std::string table = readme.substr(at, readme.find("\n\n", at) - at);
  std::set<std::string> documented;
  const std::regex row(R"(\n\| `([a-z_]+)` \|)");
  for (std::sregex_iterator it(table.begin(), table.end(), row), end; it != end; ++it)
    documented.insert((*it)[1]);
  std::set<std::string> listed;
  for (const auto& prop : tauplan::model::platform_properties())
    listed.insert(prop.name);
  CHECK(documented == listed);
  CHECK(listed.count("gpu_model") == 1);  // the table was read
}

TEST_CASE("plans: only strategies build a Plan from nothing") {
  const std::regex declaration(R"((^|[^A-Za-z_:<])(model::)?Plan\s+[a-z_]+\s*(;|\{\}|\(\)))");
  std::vector<std::string> found;
  for (const char* dir : {"model", "sim", "exec", "study", "cli"})
    for (const fs::path& file : sources(kRoot, dir)) {
      if (file.stem().string().rfind("strategy", 0) == 0) continue;
      const std::string code = without_comments(read(kRoot / file));
      if (std::regex_search(code, declaration)) found.push_back(file.string());
    }
  // The planner keeps one Plan made by make_plan and re-costs it (a member, assigned once).
  found.erase(std::remove(found.begin(), found.end(), "model/planner.cpp"), found.end());
  INFO("files that declare an empty Plan: " << found.size());
  for (const auto& f : found)
    INFO(f);
  CHECK(found.empty());
}

TEST_CASE("verbs: every cli/verb_*.cpp stays under 250 lines (the logic lives in study/)") {
  size_t verbs = 0;
  for (const fs::path& file : sources(kRoot, "cli")) {
    if (file.stem().string().rfind("verb_", 0) != 0) continue;
    ++verbs;
    const std::string text = read(kRoot / file);
    const auto lines = std::count(text.begin(), text.end(), '\n');
    INFO(file.string() << ": " << lines << " lines");
    CHECK(lines < 250);
  }
  CHECK(verbs >= 8);
}

TEST_CASE("engines: analytic, simgrid and exec are registered, each with its verb") {
  const auto names = tauplan::study::engine_names();
  CHECK(names == std::vector<std::string>{"analytic", "simgrid", "exec"});
  std::set<std::string> verbs;
  for (const auto& n : names)
    verbs.insert(tauplan::study::engine(n).verb());
  CHECK(verbs == std::set<std::string>{"predict", "simulate", "measure"});
}
