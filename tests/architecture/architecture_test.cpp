// architecture_test.cpp: the rules of the source tree that the compiler cannot see.
//
// Layering (DESIGN.md): model <- sim, model <- exec, {model, sim, exec} <- study <- cli, and only
// sim/ includes SimGrid (its headers sit in /usr/include, so the linker alone cannot enforce
// it). Inside model/, a room per kind of thing (base, compute, convergence, inputs, ir, analytic),
// each including only the rooms below it (kModelRooms). Inside exec/, three rooms
// (kExecRooms): the backend reaches exec/cuda/ only through cuda_backend.hpp and never
// exec/testbed/, and exec/cuda/ reaches nothing outside what the CUDA-only build compiles. Every
// top-level folder holding C++ is a layer, tests/ aside. Inside study/, a folder per
// study (study/<study>/, its unit tests beside it) that uses only itself and study/common/
// (validate also testbed/). Names: a strategy's or a collective algorithm's name appears as a
// string literal only in the files that carry that name (its own files: strategy_<name>.cpp,
// collective_<name>.cpp, lower_<name>.cpp, ...), never compared elsewhere. Extending: every
// registered collective has its analytic cost and its SimGrid lowering as files of its own, every
// strategy its file, as README "Extending" says; plans are built by strategies only; verb files
// stay small. Repeats: no block of six lines stands twice in the sources (repeated_blocks() states
// what counts as a line). Each rule is also run on a planted violation, so a checker that finds
// nothing cannot pass.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "exec/p2p_collective.hpp"
#include "model/inputs/platform.hpp"
#include "model/ir/collective.hpp"
#include "model/ir/strategy.hpp"
#include "sim/collective_lowering.hpp"
#include "study/common/engines.hpp"

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
  return ext == ".cpp" || ext == ".hpp" || ext == ".cu" || ext == ".cuh" || ext == ".h";
}

/// A test beside the code it tests (study/<study>/*_test.cpp and their support headers).
bool is_test_file(const fs::path& path) {
  const std::string stem = path.stem().string();
  auto ends_with = [&stem](const std::string& tail) {
    return stem.size() >= tail.size() &&
           stem.compare(stem.size() - tail.size(), tail.size(), tail) == 0;
  };
  return ends_with("_test") || ends_with("_test_support");
}

/// C++ of the product: not a test, even one kept beside its code.
bool is_product_source(const fs::path& path) {
  return is_source(path) && !is_test_file(path);
}

/// Each item on a line of its own, indented: the body of a failure message.
std::string indented(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& item : items)
    text += "  " + item + "\n";
  return text;
}

/// Source files under root/dir (those `keep` takes: C++ by default), relative to root, sorted.
std::vector<fs::path> sources(const fs::path& root, const std::string& dir,
                              bool (*keep)(const fs::path&) = is_source) {
  std::vector<fs::path> out;
  if (!fs::is_directory(root / dir)) return out;
  for (const auto& entry : fs::recursive_directory_iterator(root / dir))
    if (entry.is_regular_file() && keep(entry.path()))
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

/// The layers (DESIGN.md), each with the include prefixes it may not use. tests/ is the one folder
/// of C++ outside them: a test includes whatever it tests.
std::vector<Layer> layers() {
  const std::vector<std::string> simgrid = {"simgrid/", "xbt/", "xbt.h", "smpi/"};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  return {
      {"model", with({"sim/", "exec/", "study/", "cli/"}, simgrid)},
      {"exec", with({"sim/", "study/", "cli/"}, simgrid)},
      {"sim", {"exec/", "study/", "cli/"}},
      {"study", {"cli/"}},
      // The verbs reach the engines and the testbed through study/ only.
      {"cli", with({"sim/", "exec/"}, simgrid)},
      {"bench", {"cli/"}},
  };
}

/// Top-level folders holding C++ that no layer names (tests/, hidden folders and build folders,
/// build* or any holding a CMakeCache.txt, aside).
std::vector<std::string> folders_outside_layers(const fs::path& root) {
  std::set<std::string> named = {"tests"};
  for (const Layer& layer : layers())
    named.insert(layer.dir);
  std::vector<std::string> outside;
  for (const auto& entry : fs::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name[0] == '.' || name.rfind("build", 0) == 0 ||
        fs::exists(entry.path() / "CMakeCache.txt") || named.count(name) > 0)
      continue;
    if (!sources(root, name).empty()) outside.push_back(name);
  }
  std::sort(outside.begin(), outside.end());
  return outside;
}

/// "FILE: #include <...>" for every include a layer may not make.
std::vector<std::string> layering_violations(const fs::path& root) {
  const std::regex include(R"(#\s*include\s*[<"]([^>"]+)[>"])");
  std::vector<std::string> violations;
  for (const Layer& layer : layers())
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

/// study/'s rooms: every file in a study's folder (study/<study>/), which includes only its own
/// folder and study/common/ (and the folders `may_also` grants it); common/ includes only itself;
/// every folder holds unit tests (a *_test.cpp). "FILE: ..." for each breach.
std::vector<std::string> study_room_violations(
    const fs::path& root, const std::map<std::string, std::set<std::string>>& may_also) {
  const std::regex include(R"(#\s*include\s*"study/([^/"]+)/[^"]*")");
  std::vector<std::string> violations;
  std::map<std::string, bool> tested;
  for (const fs::path& file : sources(root, "study")) {
    const std::vector<fs::path> parts(file.begin(), file.end());
    if (parts.size() != 3) {
      violations.push_back(file.generic_string() + ": not in a study's folder (study/<study>/)");
      continue;
    }
    const std::string room = parts[1].string();
    tested[room] = tested[room] || (is_test_file(file) && file.extension() == ".cpp");
    const std::string code = without_comments(read(root / file));
    for (std::sregex_iterator it(code.begin(), code.end(), include), end; it != end; ++it) {
      const std::string target = (*it)[1];
      const auto granted = may_also.find(room);
      if (target == room || target == "common" ||
          (granted != may_also.end() && granted->second.count(target) > 0))
        continue;
      violations.push_back(file.generic_string() + ": #include study/" + target + "/...");
    }
  }
  for (const auto& [room, has_tests] : tested)
    if (!has_tests)
      violations.push_back("study/" + room + "/: no unit test (*_test.cpp) beside it");
  return violations;
}

/// What one study may use of another: validate measures on the testbed (testbed/).
const std::map<std::string, std::set<std::string>> kStudyMayAlso = {{"validate", {"testbed"}}};

/// model/'s rooms, each with the rooms it may include (itself among them), from the bottom up:
/// what a file is decides its room, and a room uses only what is below it (README "Layout").
const std::map<std::string, std::set<std::string>> kModelRooms = {
    {"base", {"base"}},
    // The GPU machine builds compute/ with base/error.cpp alone (model/compute/CMakeLists.txt).
    {"compute", {"compute", "base/error.hpp"}},
    {"convergence", {"base", "convergence"}},
    {"inputs", {"base", "compute", "inputs"}},
    {"ir", {"base", "compute", "convergence", "inputs", "ir"}},
    {"analytic", {"base", "compute", "convergence", "inputs", "ir", "analytic"}},
};

/// The quoted includes of a file (comments left out).
std::vector<std::string> quoted_includes(const fs::path& file) {
  const std::regex include(R"re(#\s*include\s*"([^"]+)")re");
  const std::string code = without_comments(read(file));
  std::vector<std::string> out;
  for (std::sregex_iterator it(code.begin(), code.end(), include), end; it != end; ++it)
    out.push_back((*it)[1]);
  return out;
}

/// model/'s rooms: every C++ file in a room's folder (model/<room>/) that `rooms` names, which
/// includes, by its model/ path, only the rooms (or single files: "base/error.hpp") `rooms`
/// grants it. "FILE: ..." for each breach.
std::vector<std::string> model_room_violations(
    const fs::path& root, const std::map<std::string, std::set<std::string>>& rooms) {
  const std::string generated = "tauplan_git_commit.h";  // model/git_commit.cmake writes it
  std::vector<std::string> violations;
  for (const fs::path& file : sources(root, "model")) {
    const std::vector<fs::path> parts(file.begin(), file.end());
    const auto room = parts.size() == 3 ? rooms.find(parts[1].string()) : rooms.end();
    if (room == rooms.end()) {
      violations.push_back(file.generic_string() + ": not in a room of model/ (model/<room>/)");
      continue;
    }
    for (const std::string& path : quoted_includes(root / file)) {
      if (path == generated) continue;
      if (path.rfind("model/", 0) != 0) {
        violations.push_back(file.generic_string() + ": #include " + path + " (not a model/ path)");
        continue;
      }
      const std::string target = path.substr(6);
      const std::string target_room = target.substr(0, target.find('/'));
      if (room->second.count(target_room) == 0 && room->second.count(target) == 0)
        violations.push_back(file.generic_string() + ": #include " + path);
    }
  }
  return violations;
}

/// exec/'s rooms, each with what it may include of exec/ and model/: the backend proper (exec/'s
/// own files), which reaches the CUDA backend through its plain C++ interface only; the CUDA
/// backend (exec/cuda/); the emulated testbed (exec/testbed/). A grant ending in "/" is the files
/// directly in that folder, one ending in "/**" everything below it, any other a single file.
const std::map<std::string, std::set<std::string>> kExecRooms = {
    {"exec", {"exec/", "exec/cuda/cuda_backend.hpp", "model/**"}},
    {"exec/cuda", {"exec/", "exec/cuda/", "model/compute/", "model/base/error.hpp"}},
    {"exec/testbed", {"exec/", "exec/testbed/", "model/**"}},
};

bool granted_by(const std::set<std::string>& grants, const std::string& target) {
  const std::string folder = fs::path(target).parent_path().generic_string() + "/";
  for (const std::string& grant : grants) {
    const bool below = grant.size() > 3 && grant.compare(grant.size() - 3, 3, "/**") == 0 &&
                       target.rfind(grant.substr(0, grant.size() - 2), 0) == 0;
    if (grant == target || grant == folder || below) return true;
  }
  return false;
}

/// The exec/ files compiled into tauplan_exec_core (exec/CMakeLists.txt), the part of exec/ that
/// the GPU machine builds (TAUPLAN_CUDA_ONLY): their headers, and exec/'s headers with no .cpp.
std::set<std::string> exec_core_headers(const fs::path& root) {
  const std::string cmake = read(root / "exec/CMakeLists.txt");
  std::smatch list;
  std::set<std::string> core;
  if (!std::regex_search(cmake, list,
                         std::regex(R"(add_library\(tauplan_exec_core STATIC([^)]*)\))")))
    return core;
  std::istringstream names(list[1].str());
  for (std::string name; names >> name;)
    core.insert("exec/" + fs::path(name).replace_extension(".hpp").generic_string());
  for (const fs::path& file : sources(root, "exec"))
    if (file.parent_path() == "exec" && file.extension() == ".hpp" &&
        !fs::exists(root / fs::path(file).replace_extension(".cpp")))
      core.insert(file.generic_string());
  return core;
}

/// exec/'s rooms: every C++ file of exec/ in a room that `rooms` names, including of exec/ and
/// model/ only what its room grants; and everything exec/cuda/ reaches through exec/ and model/
/// (includes followed from the source root) is what the CUDA-only build compiles: exec/cuda/,
/// tauplan_exec_core (exec_core_headers), model/compute/ and model/base/error.hpp. "FILE: ..."
/// for each breach.
std::vector<std::string> exec_room_violations(
    const fs::path& root, const std::map<std::string, std::set<std::string>>& rooms) {
  std::vector<std::string> violations;
  std::vector<fs::path> cuda_files;
  for (const fs::path& file : sources(root, "exec", is_product_source)) {
    const auto room = rooms.find(file.parent_path().generic_string());
    if (room == rooms.end()) {
      violations.push_back(file.generic_string() + ": not in a room of exec/");
      continue;
    }
    if (room->first == "exec/cuda") cuda_files.push_back(file);
    for (const std::string& target : quoted_includes(root / file))
      if (!fs::exists(root / target))  // a folder-relative include would escape both checks
        violations.push_back(file.generic_string() + ": #include " + target +
                             " (not a path from the source root)");
      else if ((target.rfind("exec/", 0) == 0 || target.rfind("model/", 0) == 0) &&
               !granted_by(room->second, target))
        violations.push_back(file.generic_string() + ": #include " + target);
  }
  const std::set<std::string> core = exec_core_headers(root);
  const std::set<std::string> gpu_build = {"exec/cuda/", "model/compute/", "model/base/error.hpp"};
  std::set<std::string> seen;
  std::vector<std::pair<std::string, std::string>> stack;  // (file, the cuda file reaching it)
  for (const fs::path& file : cuda_files)
    stack.emplace_back(file.generic_string(), file.generic_string());
  while (!stack.empty()) {
    const auto [file, from] = stack.back();
    stack.pop_back();
    if (!seen.insert(file).second) continue;
    if (!granted_by(gpu_build, file) && core.count(file) == 0) {
      violations.push_back(from + ": reaches " + file + " (not in the CUDA-only build)");
      continue;
    }
    for (const std::string& target : quoted_includes(root / file))
      if (fs::exists(root / target)) stack.emplace_back(target, from);
  }
  std::sort(violations.begin(), violations.end());
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
    for (const fs::path& file : sources(root, dir, is_product_source)) {
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
    for (const fs::path& file : sources(root, dir, is_product_source)) {
      const std::string stem = file.stem().string();
      const std::string code = without_comments(read(root / file));
      for (const std::string& name : names) {
        std::string as_file = name;
        std::replace(as_file.begin(), as_file.end(), '-', '_');
        if (stem.find(as_file) != std::string::npos) continue;  // its own file
        // The same word meaning something else: "ps" is the picosecond in the unit table.
        if (file == fs::path("model/base/units.cpp") && name == "ps") continue;
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

// ------------------------------------------------------------------ repeats

/// Scripts and build files: their comments start with '#'.
bool is_hash_commented(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".sh" || ext == ".py" || ext == ".cmake" || path.filename() == "CMakeLists.txt";
}

/// What the repeat rule reads: C++ and CUDA (.cpp .hpp .h .cu .cuh), scripts (.sh .py) and CMake
/// (CMakeLists.txt, .cmake). Data (YAML, JSON, CSV, XML, goldens) and prose are not code.
bool is_scanned(const fs::path& path) {
  return is_source(path) || path.extension() == ".cuh" || is_hash_commented(path);
}

/// The project's folders: every tracked folder holding code (build folders, results/ and the
/// generated *.plan folders beside them are not), and the top CMakeLists.txt.
std::vector<fs::path> scanned_files(const fs::path& root) {
  std::vector<fs::path> files;
  for (const char* dir : {".ci", "bench", "cli", "exec", "experiments", "model", "platforms", "sim",
                          "study", "tests"})
    for (const fs::path& file : sources(root, dir, is_scanned))
      files.push_back(file);
  if (fs::is_regular_file(root / "CMakeLists.txt")) files.emplace_back("CMakeLists.txt");
  return files;
}

/// `line` without its comment: from `//` (C++, outside a string or character literal; a block
/// comment is carried over lines in `in_block`) or from a `#` at the start or after a blank
/// (scripts, outside quotes).
std::string code_of(const std::string& line, bool hash_comments, bool& in_block) {
  std::string out;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    const char next = i + 1 < line.size() ? line[i + 1] : '\0';
    if (in_block) {
      if (c == '*' && next == '/') in_block = false, ++i;
      continue;
    }
    if (quote) {
      out += c;
      if (c == '\\' && next)
        out += line[++i];
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    if (hash_comments && c == '#' &&
        (i == 0 || std::isspace(static_cast<unsigned char>(line[i - 1]))))
      break;
    if (!hash_comments && c == '/' && next == '/') break;
    if (!hash_comments && c == '/' && next == '*') {
      in_block = true, ++i;
      continue;
    }
    out += c;
  }
  return out;
}

/// A line that says nothing of its own: only brackets, semicolons and commas, perhaps with one
/// word that closes or opens a block (else, do, then, fi, done, esac, try, endif(), public: ...);
/// or an include or import (#include, #pragma once, import, from ... import, using-declarations).
bool is_trivial(const std::string& code) {
  std::string word;
  for (char c : code)
    if (std::string("{}()[];, ").find(c) == std::string::npos) word += c;
  static const std::set<std::string> structural = {
      "",        "else",     "do",         "then",       "fi",          "done",
      "esac",    "try",      "endif",      "endforeach", "endfunction", "endmacro",
      "public:", "private:", "protected:", "#else",      "#endif"};
  if (structural.count(word)) return true;
  if (code.empty() || std::string("#ifu").find(code[0]) == std::string::npos) return false;
  static const std::regex import(
      R"(^(#\s*include\b|#\s*pragma\s+once|import\s|from\s+\S+\s+import\s|using\s+[^=]*;$))");
  return std::regex_search(code, import);
}

/// The lines of `text` that count, each with its line number (from 1): comments removed, white
/// space trimmed at both ends and folded inside, trivial lines (is_trivial) left out.
std::vector<std::pair<int, std::string>> counted_lines(const std::string& text,
                                                       bool hash_comments) {
  std::vector<std::pair<int, std::string>> out;
  std::istringstream in(text);
  bool in_block = false;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::string folded;
    for (char c : code_of(line, hash_comments, in_block)) {
      const bool blank = std::isspace(static_cast<unsigned char>(c)) != 0;
      if (!blank)
        folded += c;
      else if (!folded.empty() && folded.back() != ' ')
        folded += ' ';
    }
    if (!folded.empty() && folded.back() == ' ') folded.pop_back();
    if (!is_trivial(folded)) out.emplace_back(number, folded);
  }
  return out;
}

/// "A:FIRST-LAST ~ B:FIRST-LAST" for every run of `run` or more counted lines (counted_lines)
/// that stands at two places among `files` (relative to root), in two files or twice in one;
/// a longer run is one entry. Sorted by A, then B.
std::vector<std::string> repeated_blocks(const fs::path& root, const std::vector<fs::path>& files,
                                         std::size_t run = 6) {
  std::vector<std::vector<std::pair<int, std::string>>> lines;
  std::unordered_map<std::string, int> ids;  // each distinct line as a number
  std::unordered_map<std::string, std::vector<std::pair<int, int>>> places;  // (file, start)
  for (const fs::path& file : files) {
    lines.push_back(counted_lines(read(root / file), is_hash_commented(file)));
    const auto& counted = lines.back();
    std::vector<int> id;
    for (const auto& line : counted)
      id.push_back(ids.emplace(line.second, static_cast<int>(ids.size())).first->second);
    for (std::size_t k = 0; k + run <= id.size(); ++k)
      places[std::string(reinterpret_cast<const char*>(&id[k]), run * sizeof(int))].emplace_back(
          static_cast<int>(lines.size() - 1), static_cast<int>(k));
  }
  std::set<std::tuple<int, int, int, int>> pairs;  // (file a, start a, file b, start b)
  for (const auto& entry : places)
    for (std::size_t i = 0; i < entry.second.size(); ++i)
      for (std::size_t j = i + 1; j < entry.second.size(); ++j) {
        const auto [fa, ka] = entry.second[i];
        const auto [fb, kb] = entry.second[j];
        if (fa != fb || static_cast<std::size_t>(std::abs(kb - ka)) >= run)
          pairs.emplace(fa, ka, fb, kb);
      }
  std::vector<std::string> found;
  const auto place = [&](int f, int first, int last) {
    const auto& counted = lines[static_cast<std::size_t>(f)];
    return files[static_cast<std::size_t>(f)].string() + ":" +
           std::to_string(counted[static_cast<std::size_t>(first)].first) + "-" +
           std::to_string(counted[static_cast<std::size_t>(last)].first);
  };
  const int width = static_cast<int>(run) - 1;
  for (const auto& [fa, ka, fb, kb] : pairs) {
    if (pairs.count({fa, ka - 1, fb, kb - 1})) continue;  // inside a longer run
    int more = 0;
    while (pairs.count({fa, ka + more + 1, fb, kb + more + 1}))
      ++more;
    found.push_back(place(fa, ka, ka + more + width) + " ~ " + place(fb, kb, kb + more + width));
  }
  return found;
}

// --- unity batches of the test executables ----------------------------------------------------
// The test executables compile their files in unity batches (CMakeLists.txt, TAUPLAN_UNITY_TESTS)
// whose boundaries move as files are added: a name that two test files of one executable both
// define at file scope fails to compile ("redefinition of"), or quietly picks the other file's
// overload, once the two share a batch. So no two test files of one folder define the same name
// (a folder holds one executable's files, or several executables': stricter than needed).

/// The name a line at column 0 of a test file defines at file scope (a function, a constant, a
/// type), or "" (a TEST_CASE, a namespace, a using line, a preprocessor line, a brace, anything
/// indented: code inside a definition or a multi-line literal).
std::string file_scope_name(const std::string& line) {
  static const std::regex skipped(
      R"(^(TEST_CASE|TEMPLATE|SCENARIO|namespace|using|template|#|\}))");
  static const std::regex definition(
      R"(^(?:static\s+|inline\s+|constexpr\s+|const\s+)*(?:(?:struct|class|enum class|enum)\s+(\w+)|[A-Za-z_][\w:<>,*& ]*?[ *&](\w+)\s*(?:\(|=|\{|\[|;)))");
  if (line.empty() || std::isspace(static_cast<unsigned char>(line[0])) ||
      std::regex_search(line, skipped))
    return "";
  std::smatch m;
  if (!std::regex_search(line, m, definition)) return "";
  return m[1].matched ? m[1].str() : m[2].str();
}

/// Each name that more than one of `files` (name, text) defines at file scope, with the files.
std::vector<std::string> unity_collisions(
    const std::vector<std::pair<std::string, std::string>>& files) {
  std::map<std::string, std::set<std::string>> definers;
  for (const auto& [name, text] : files) {
    std::istringstream in(without_comments(text));
    for (std::string line; std::getline(in, line);) {
      const std::string defined = file_scope_name(line);
      if (!defined.empty()) definers[defined].insert(name);
    }
  }
  std::vector<std::string> out;
  for (const auto& [defined, names] : definers)
    if (names.size() > 1) {
      std::string where;
      for (const std::string& n : names)
        where += (where.empty() ? "" : ", ") + n;
      out.push_back(defined + ": " + where);
    }
  return out;
}

/// The test files of one test folder, as the test executables take them: *_test.cpp files
/// (`recursive`: in subfolders too), and the cli tests' shared run_command.cpp.
std::vector<std::pair<std::string, std::string>> test_files_of(const fs::path& folder,
                                                               bool recursive) {
  std::vector<std::pair<std::string, std::string>> out;
  auto take = [&](const fs::path& file) {
    const std::string stem = file.stem().string();
    if (file.extension() == ".cpp" &&
        ((stem.size() > 5 && stem.compare(stem.size() - 5, 5, "_test") == 0) ||
         stem == "run_command"))
      out.emplace_back(fs::relative(file, kRoot).string(), read(file));
  };
  if (recursive) {
    for (const auto& e : fs::recursive_directory_iterator(folder))
      if (e.is_regular_file()) take(e.path());
  } else {
    for (const auto& e : fs::directory_iterator(folder))
      if (e.is_regular_file()) take(e.path());
  }
  return out;
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

TEST_CASE("layering: every folder holding C++ is a layer (or tests/)") {
  const auto outside = folders_outside_layers(kRoot);
  INFO("folders no layer names:\n" << indented(outside));
  CHECK(outside.empty());
  ScratchTree tree;
  tree.write("model/a.hpp", "\n");
  tree.write("tools/helper.cpp", "\n");
  tree.write("docs/notes.md", "\n");
  tree.write("build-asan/generated.h", "\n");
  tree.write("out/CMakeCache.txt", "\n");
  tree.write("out/catalog_data.cpp", "\n");
  CHECK(folders_outside_layers(tree.root) == std::vector<std::string>{"tools"});
}

TEST_CASE("layering: a forbidden include planted in model/ and exec/ is found") {
  ScratchTree tree;
  tree.write("model/bad.cpp",
             "// bad.cpp\n#include <simgrid/s4u.hpp>\n#include \"sim/simulator.hpp\"\n");
  tree.write("exec/bad.hpp", "#include \"cli/verb.hpp\"\n// #include \"sim/commented_out.hpp\"\n");
  tree.write("study/fine.cpp", "#include \"sim/simulator.hpp\"\n#include \"exec/trainer.hpp\"\n");
  tree.write("cli/verb_bad.cpp",
             "#include \"study/sweep/sweep.hpp\"\n#include \"exec/testbed/fabric.hpp\"\n");
  const auto violations = layering_violations(tree.root);
  CHECK(violations ==
        std::vector<std::string>{"model/bad.cpp: #include simgrid/s4u.hpp",
                                 "model/bad.cpp: #include sim/simulator.hpp",
                                 "exec/bad.hpp: #include cli/verb.hpp",
                                 "cli/verb_bad.cpp: #include exec/testbed/fabric.hpp"});
}

TEST_CASE("layering: each file of model/ is in a room that includes only the rooms below it") {
  const auto violations = model_room_violations(kRoot, kModelRooms);
  INFO("breaches:\n" << indented(violations));
  CHECK(violations.empty());
  CHECK(sources(kRoot, "model/ir").size() > 10);  // the scan saw the rooms
}

TEST_CASE(
    "layering: a room of model/ reaching up or around, and a file outside the rooms, are found") {
  ScratchTree tree;
  tree.write("model/base/fine.hpp", "#include \"model/base/other.hpp\"\n#include <string>\n");
  tree.write("model/inputs/up.cpp",
             "#include \"model/ir/plan.hpp\"\n#include \"model/compute/layer_ops.hpp\"\n"
             "// #include \"model/analytic/analytic.hpp\"\n");
  tree.write("model/ir/flat.cpp",
             "#include \"model/plan.hpp\"\n#include \"../analytic/analytic.hpp\"\n");
  tree.write("model/compute/ops.cpp",
             "#include \"model/base/error.hpp\"\n#include \"model/base/units.hpp\"\n");
  tree.write("model/loose.cpp", "int x;\n");
  tree.write("model/attic/old.hpp", "int y;\n");
  const auto violations = model_room_violations(tree.root, kModelRooms);
  CHECK(violations ==
        std::vector<std::string>{"model/attic/old.hpp: not in a room of model/ "
                                 "(model/<room>/)",
                                 "model/compute/ops.cpp: #include model/base/units.hpp",
                                 "model/inputs/up.cpp: #include model/ir/plan.hpp",
                                 "model/ir/flat.cpp: #include model/plan.hpp",
                                 "model/ir/flat.cpp: #include ../analytic/analytic.hpp "
                                 "(not a model/ path)",
                                 "model/loose.cpp: not in a room of model/ "
                                 "(model/<room>/)"});
}

TEST_CASE("layering: exec/'s rooms include only what they are granted, cuda/ only its build") {
  const auto violations = exec_room_violations(kRoot, kExecRooms);
  INFO("breaches:\n" << indented(violations));
  CHECK(violations.empty());
  CHECK(sources(kRoot, "exec/cuda").size() > 5);  // the scan saw the rooms
  CHECK(exec_core_headers(kRoot).count("exec/mlp.hpp") == 1);
}

TEST_CASE("layering: exec/ reaching into a room, cuda/ reaching past its build, are found") {
  ScratchTree tree;
  tree.write("exec/CMakeLists.txt", "add_library(tauplan_exec_core STATIC\n  core.cpp)\n");
  tree.write("exec/core.hpp", "#include \"model/compute/layer_ops.hpp\"\n");
  tree.write("exec/core.cpp", "#include \"exec/core.hpp\"\n");
  // Header-only, so counted in the GPU build; it reaches trainer.hpp, which is not.
  tree.write("exec/plain.hpp", "#include \"exec/trainer.hpp\"\n");
  tree.write("exec/trainer.hpp", "#include \"model/ir/plan.hpp\"\n");
  tree.write("exec/trainer.cpp",
             "#include \"exec/cuda/cuda_backend.hpp\"\n#include \"exec/cuda/kernels.hpp\"\n"
             "#include \"exec/testbed/fabric.hpp\"\n");
  tree.write("exec/cuda/cuda_backend.hpp", "#include \"exec/core.hpp\"\n");
  tree.write("exec/cuda/kernels.hpp", "#include \"exec/plain.hpp\"\n");
  tree.write("exec/cuda/replica.cpp",
             "#include \"model/base/units.hpp\"\n#include \"device_ops.hpp\"\n"
             "// #include \"exec/trainer.hpp\"\n");
  tree.write("exec/cuda/device_ops.hpp", "\n");
  tree.write("exec/testbed/fabric.hpp",
             "#include \"exec/cuda/kernels.hpp\"\n#include \"model/ir/plan.hpp\"\n");
  tree.write("exec/attic/old.cpp", "\n");
  tree.write("model/compute/layer_ops.hpp", "\n");
  tree.write("model/ir/plan.hpp", "\n");
  tree.write("model/base/units.hpp", "\n");
  const auto violations = exec_room_violations(tree.root, kExecRooms);
  CHECK(violations ==
        std::vector<std::string>{
            "exec/attic/old.cpp: not in a room of exec/",
            "exec/cuda/kernels.hpp: reaches exec/trainer.hpp (not in the CUDA-only build)",
            "exec/cuda/replica.cpp: #include device_ops.hpp (not a path from the source root)",
            "exec/cuda/replica.cpp: #include model/base/units.hpp",
            "exec/cuda/replica.cpp: reaches model/base/units.hpp (not in the CUDA-only build)",
            "exec/testbed/fabric.hpp: #include exec/cuda/kernels.hpp",
            "exec/trainer.cpp: #include exec/cuda/kernels.hpp",
            "exec/trainer.cpp: #include exec/testbed/fabric.hpp"});
}

TEST_CASE("layering: each study lives in its folder, uses only its own and common/, has tests") {
  const auto violations = study_room_violations(kRoot, kStudyMayAlso);
  INFO("study/ rooms broken:\n" << indented(violations));
  CHECK(violations.empty());
  CHECK(sources(kRoot, "study/validate").size() > 4);  // the scan saw the rooms
}

TEST_CASE("layering: a study reaching into another, a loose file and an untested room are found") {
  ScratchTree tree;
  tree.write("study/sweep/sweep.cpp",
             "#include \"study/common/files.hpp\"\n#include \"study/validate/validate.hpp\"\n");
  tree.write("study/sweep/sweep_test.cpp", "#include \"study/sweep/sweep.hpp\"\n");
  tree.write("study/validate/validate.cpp", "#include \"study/testbed/testbed_control.hpp\"\n");
  tree.write("study/validate/validate_test.cpp", "// #include \"study/plan/commented.hpp\"\n");
  tree.write("study/common/files.cpp", "#include \"study/sweep/sweep.hpp\"\n");
  tree.write("study/common/files_test.cpp", "\n");
  tree.write("study/testbed/testbed_control.cpp", "\n");
  tree.write("study/testbed/testbed_test_support.hpp", "\n");  // support is not a test
  tree.write("study/loose.cpp", "\n");
  const auto violations = study_room_violations(tree.root, kStudyMayAlso);
  CHECK(violations ==
        std::vector<std::string>{"study/common/files.cpp: #include study/sweep/...",
                                 "study/loose.cpp: not in a study's folder (study/<study>/)",
                                 "study/sweep/sweep.cpp: #include study/validate/...",
                                 "study/testbed/: no unit test (*_test.cpp) beside it"});
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

namespace {

/// C++ files (of `files`) whose name another C++ file in another folder also has, as
/// "name: first, second ...", one line per shared name.
std::vector<std::string> shared_file_names(const std::vector<fs::path>& files) {
  std::map<std::string, std::vector<std::string>> by_name;
  for (const fs::path& file : files)
    if (is_source(file) || file.extension() == ".cuh")
      by_name[file.filename().string()].push_back(file.generic_string());
  std::vector<std::string> shared;
  for (const auto& [name, paths] : by_name) {
    if (paths.size() < 2) continue;
    std::string line = name + ":";
    for (const std::string& path : paths)
      line += " " + path;
    shared.push_back(line);
  }
  return shared;
}

}  // namespace

TEST_CASE("names: every C++ file's name is unique in the tree") {
  const std::vector<std::string> shared = shared_file_names(scanned_files(kRoot));
  INFO("files that share a name (give each a name that says what it holds):\n" << indented(shared));
  CHECK(shared.empty());
  // Planted: two folders with a file of one name are found, whatever the extension of others.
  const std::vector<fs::path> planted = {"model/trace.hpp", "sim/trace.hpp", "sim/trace.cpp",
                                         "tests/x/run.sh", "tests/y/run.sh"};
  CHECK(shared_file_names(planted) ==
        std::vector<std::string>{"trace.hpp: model/trace.hpp sim/trace.hpp"});
}

TEST_CASE("repeats: no block of six lines stands twice in the sources") {
  const std::vector<fs::path> files = scanned_files(kRoot);
  for (const char* kind : {"CMakeLists.txt", "study/plan/planner.cpp", "exec/cuda/profile.cu",
                           ".ci/format.sh", "exec/cuda/pytorch_block.py", "model/git_commit.cmake"})
    CHECK(std::count(files.begin(), files.end(), fs::path(kind)) == 1);  // the scan saw each kind
  const auto found = repeated_blocks(kRoot, files);
  INFO("blocks of six or more lines that stand twice (factor them into one function):\n"
       << indented(found));
  CHECK(found.empty());
}

TEST_CASE("repeats: a planted block of six lines is found, whatever its comments and indentation") {
  ScratchTree tree;
  // Six lines that count, with blank lines, comments, braces and includes between them.
  const std::string block =
      "  int total = 0;\n"
      "  for (int v : values) {\n"
      "\n"
      "    total += v;  // summed\n"
      "  }\n"
      "  /* a block\n"
      "     comment */ const int mean = total / n;\n"
      "  if (mean < 0) {\n"
      "    return -mean;\n"
      "  } else {\n"
      "    return mean;\n"
      "  }\n";
  tree.write("model/one.cpp", "#include <vector>\n\nint f(int n) {\n" + block + "}\n");
  // Elsewhere indented otherwise, other comments; and twice more in one file.
  std::string shifted;
  std::istringstream in(block);
  for (std::string line; std::getline(in, line);)
    shifted += "      " + line + (line.find("//") != std::string::npos ? "" : "  // other") + "\n";
  tree.write("sim/two.hpp", "namespace {\nint g(int n) {\n" + shifted + "}\n}  // namespace\n");
  tree.write("study/twice.cpp", "int a(int n) {\n" + block + "}\nint b(int n) {\n" + block + "}\n");
  // Not a repeat: five lines in common; trivial lines only; data; outside the project's folders.
  const std::string five = "a();\nb();\nc();\nd();\ne();\n";
  tree.write("cli/five.cpp", five + "f();\n");
  tree.write("bench/five.cpp", five + "g();\n");
  const std::string trivial = "#include <a>\n}\n});\n} else {\nfi\ndone\n;;\n#endif\n";
  tree.write("exec/trivial.cpp", trivial + "x();\n");
  tree.write("tests/trivial.cpp", trivial + "y();\n");
  tree.write("experiments/data.yaml", block);
  tree.write("build-x/copy.cpp", block);
  // A script's repeat: '#' comments and shebangs do not count, code does.
  const std::string script =
      "#!/bin/bash\nset -eu\nfor f in \"$@\"; do  # each\n  if [ -f \"$f\" ]; then\n"
      "    echo \"#$f\"\n    wc -l \"$f\"\n  fi\ndone\nexit 0\n";
  tree.write("tests/a.sh", script);
  tree.write(".ci/b.sh", "# b.sh: the same loop\n" + script);
  const auto files = scanned_files(tree.root);
  CHECK(std::count(files.begin(), files.end(), fs::path("experiments/data.yaml")) == 0);
  const auto found = repeated_blocks(tree.root, files);
  CHECK(found == std::vector<std::string>{
                     ".ci/b.sh:3-10 ~ tests/a.sh:2-9",
                     "model/one.cpp:4-14 ~ sim/two.hpp:3-13",
                     "model/one.cpp:4-14 ~ study/twice.cpp:2-12",
                     "model/one.cpp:4-14 ~ study/twice.cpp:16-26",
                     "sim/two.hpp:3-13 ~ study/twice.cpp:2-12",
                     "sim/two.hpp:3-13 ~ study/twice.cpp:16-26",
                     "study/twice.cpp:2-12 ~ study/twice.cpp:16-26",
                 });
  // Each repeat cut to five lines that count: none is found.
  const std::string head = block.substr(0, block.find("    return -mean"));
  tree.write("model/one.cpp", "int f(int n) {\n" + head + "}\n");
  tree.write("sim/two.hpp", "int g(int n) {\n  return n;\n}\n");
  tree.write("study/twice.cpp", "int a(int n) {\n" + head + "}\nint b(int n) {\n" + head + "}\n");
  tree.write(".ci/b.sh", script.substr(0, script.find("exit 0")));
  CHECK(repeated_blocks(tree.root, scanned_files(tree.root)).empty());
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
  tree.write("model/ir/strategy_sync.cpp", "const char* name() { return \"sync\"; }\n");
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
    CHECK(fs::is_regular_file(kRoot / "model" / "ir" / ("collective_" + name + ".cpp")));
    CHECK(fs::is_regular_file(kRoot / "sim" / ("lower_" + name + ".cpp")));
  }
  // exec executes every algorithm for real as messages over a PeerGroup (exec/p2p_<name>.cpp).
  const auto executed = tauplan::exec::p2p_collective_names();
  CHECK(std::set<std::string>(algorithms.begin(), algorithms.end()) ==
        std::set<std::string>(executed.begin(), executed.end()));
  for (std::string name : executed) {
    std::replace(name.begin(), name.end(), '-', '_');
    CHECK(fs::is_regular_file(kRoot / "exec" / ("p2p_" + name + ".cpp")));
  }
}

TEST_CASE("extending: every strategy is a file of its own, one baseline among them") {
  int baselines = 0;
  for (std::string name : tauplan::model::strategy_names()) {
    baselines += tauplan::model::strategy(name).is_baseline() ? 1 : 0;
    std::replace(name.begin(), name.end(), '-', '_');
    CHECK(fs::is_regular_file(kRoot / "model" / "ir" / ("strategy_" + name + ".cpp")));
  }
  CHECK(baselines == 1);
}

TEST_CASE("extending: README's Extending section names the files the registries need") {
  const std::string readme = read(kRoot / "README.md");
  const auto at = readme.find("## Extending");
  REQUIRE(at != std::string::npos);
  const std::string section = readme.substr(at, readme.find("\n## ", at + 1) - at);
  for (const char* path :
       {"model/ir/collective_<name>.cpp", "sim/lower_<name>.cpp", "model/ir/strategy_<name>.cpp",
        "model/ir/collective.cpp", "sim/collective_lowering.cpp", "model/ir/strategy.cpp",
        "exec/p2p_<name>.cpp", "exec/p2p_collective.cpp", "model/ir/engine.hpp",
        "study/common/engines.cpp", "study/common/strategy_extension_test.cpp"})
    CHECK(section.find(path) != std::string::npos);
  // What the section promises is what the tree does: the test it names defines a strategy,
  // registers it at run time and runs it in every registered engine.
  const std::string extension = read(kRoot / "study/common/strategy_extension_test.cpp");
  CHECK(extension.find("model::register_strategy(") != std::string::npos);
  for (const std::string& engine : tauplan::study::engine_names())
    CHECK(extension.find("run_engine(\"" + engine + "\"") != std::string::npos);
  // Every engine it says is listed in study/common/engines.cpp is.
  const std::string engines = read(kRoot / "study/common/engines.cpp");
  for (const std::string& engine : tauplan::study::engine_names())
    CHECK(engines.find("make_" + engine + "_engine") != std::string::npos);
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
  found.erase(std::remove(found.begin(), found.end(), "study/plan/planner.cpp"), found.end());
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

TEST_CASE("unity batches: no two test files of one executable define the same file-scope name") {
  const std::vector<std::pair<fs::path, bool>> folders = {{kRoot / "tests/model", true},
                                                          {kRoot / "tests/sim", false},
                                                          {kRoot / "tests/exec", false},
                                                          {kRoot / "tests/cli", false},
                                                          {kRoot / "study", true}};
  size_t files = 0;
  for (const auto& [folder, recursive] : folders) {
    const auto tests = test_files_of(folder, recursive);
    files += tests.size();
    const auto collisions = unity_collisions(tests);
    INFO(folder.string() << ": names two test files define:\n" << indented(collisions));
    CHECK(collisions.empty());
  }
  CHECK(files > 100);
  // Planted: a helper, a constant and a type defined twice; an indented line, a TEST_CASE and a
  // using line are not file-scope definitions.
  const auto planted = unity_collisions(
      {{"a_test.cpp",
        "namespace {\nstd::string error_of(const std::string& t) {\n  int x = 1;\n}\n"
        "const std::string kJob = \"a\";\nstruct Case {};\nusing json = nlohmann::json;\n}\n"
        "TEST_CASE(\"a\") {}\n"},
       {"b_test.cpp",
        "static double error_of(int v);\nconst std::string kJob = \"b\";\nstruct Case {\n};\n"
        "using json = nlohmann::json;\nTEST_CASE(\"a\") {}\nvoid other() {\n  int x = 2;\n}\n"}});
  CHECK(planted == std::vector<std::string>{"Case: a_test.cpp, b_test.cpp",
                                            "error_of: a_test.cpp, b_test.cpp",
                                            "kJob: a_test.cpp, b_test.cpp"});
}
