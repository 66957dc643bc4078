// simgrid_xml_check.cpp: a strict XML reader and the platform checks (see simgrid_xml_check.hpp).
#include "model/inputs/simgrid_xml_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "model/base/error.hpp"
#include "model/base/limits.hpp"
#include "model/base/units.hpp"
#include "model/base/yaml_util.hpp"

namespace tauplan::model {
namespace {

constexpr int kMaxDepth = 64;             // zones nest a few levels
constexpr std::size_t kMaxHosts = 65536;  // a platform's hosts, cluster hosts included
constexpr double kMaxCores = 65536;
constexpr double kMaxRadical = 1e6;

struct XmlElement {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<XmlElement> children;
  int line = 0;

  const std::string* attribute(const std::string& key) const {
    for (const auto& [k, v] : attributes)
      if (k == key) return &v;
    return nullptr;
  }
};

// Reads the XML subset SimGrid platforms use into a tree; refuses anything else.
class XmlReader {
 public:
  XmlReader(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  XmlElement read_document() {
    if (text_.compare(0, 3, "\xEF\xBB\xBF") == 0) pos_ = 3;  // UTF-8 byte order mark
    bool doctype = false;
    for (;;) {
      skip_blanks();
      if (at_end())
        fail("file", "a SimGrid platform: <!DOCTYPE platform ...> then <platform version=\"4.1\">",
             text_.empty() ? "an empty file" : "no element");
      if (starts("<?")) {
        skip_past("?>", "a closed <?...?> declaration");
      } else if (starts("<!--")) {
        skip_past("-->", "a closed <!-- comment -->");
      } else if (starts("<!DOCTYPE")) {
        read_doctype();
        doctype = true;
      } else if (starts("<")) {
        break;
      } else {
        fail("file", "a SimGrid platform (XML starting with <?xml or <!DOCTYPE platform)",
             "text that is not XML");
      }
    }
    if (!doctype)
      fail("DOCTYPE",
           "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\"> before <platform> "
           "(SimGrid's parser needs it)",
           "none");
    XmlElement root = read_element(0);
    for (;;) {
      skip_blanks();
      if (at_end()) break;
      if (starts("<!--"))
        skip_past("-->", "a closed <!-- comment -->");
      else if (starts("<?"))
        skip_past("?>", "a closed <?...?> declaration");
      else
        fail("</" + root.name + ">", "the end of the file after the root element", "more");
    }
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& where, const std::string& expected,
                         const std::string& got) const {
    throw InputError(file_, fmt::format("line {}: {}", line_, where), expected, got);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  bool starts(const char* s) const { return text_.compare(pos_, std::strlen(s), s) == 0; }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void advance(std::size_t n = 1) {
    for (std::size_t i = 0; i < n && pos_ < text_.size(); ++i, ++pos_) {
      const char c = text_[pos_];
      if (c == '\n') ++line_;
      if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\r' && c != '\t')
        fail("file", "XML text (no control characters)",
             fmt::format("byte 0x{:02x}", static_cast<unsigned>(static_cast<unsigned char>(c))));
    }
  }

  void skip_blanks() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      advance();
  }

  void skip_past(const char* end, const char* expected) {
    const std::size_t found = text_.find(end, pos_);
    if (found == std::string::npos) fail("file", expected, "the end of the file");
    advance(found + std::strlen(end) - pos_);
  }

  void read_doctype() {
    const int line = line_;
    const std::size_t close = text_.find('>', pos_);
    if (close == std::string::npos)
      fail("DOCTYPE", "a closed <!DOCTYPE ...>", "the end of the file");
    const std::string doctype = text_.substr(pos_, close + 1 - pos_);
    if (doctype.find('[') != std::string::npos)
      fail("DOCTYPE", "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">",
           "an internal DTD subset");
    std::size_t word = std::strlen("<!DOCTYPE");
    while (word < doctype.size() && (doctype[word] == ' ' || doctype[word] == '\t' ||
                                     doctype[word] == '\n' || doctype[word] == '\r'))
      ++word;
    if (doctype.compare(word, 8, "platform") != 0)
      throw InputError(file_, fmt::format("line {}: DOCTYPE", line),
                       "<!DOCTYPE platform ...> (a SimGrid platform)", "another DOCTYPE");
    advance(close + 1 - pos_);
  }

  static bool name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static bool name_char(char c) {
    return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == ':';
  }

  std::string read_name(const std::string& where) {
    if (!name_start(peek()))
      fail(where, "an XML name",
           at_end() ? "the end of the file" : "'" + std::string(1, peek()) + "'");
    const std::size_t start = pos_;
    while (!at_end() && name_char(peek()))
      advance();
    return text_.substr(start, pos_ - start);
  }

  // An attribute value between quotes, with the five XML entities and character references.
  std::string read_value(const std::string& where) {
    const char quote = peek();
    if (quote != '"' && quote != '\'') fail(where, "a quoted value", "no quote");
    advance();
    std::string value;
    for (;;) {
      if (at_end()) fail(where, "a closing quote", "the end of the file");
      const char c = peek();
      if (c == quote) {
        advance();
        return value;
      }
      if (c == '<') fail(where, "a value without '<'", "'<'");
      if (c != '&') {
        value += c;
        advance();
        continue;
      }
      const std::size_t semicolon = text_.find(';', pos_);
      if (semicolon == std::string::npos || semicolon - pos_ > 10)
        fail(where, "an entity such as &amp;", "a lone '&'");
      const std::string entity = text_.substr(pos_ + 1, semicolon - pos_ - 1);
      static const std::map<std::string, char> named = {
          {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
      if (const auto it = named.find(entity); it != named.end()) {
        value += it->second;
      } else if (entity.size() > 1 && entity[0] == '#') {
        const bool hex = entity[1] == 'x';
        const std::string digits = entity.substr(hex ? 2 : 1);
        long code = -1;
        if (!digits.empty() && digits.size() <= 6 &&
            digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") ==
                std::string::npos)
          code = std::stol(digits, nullptr, hex ? 16 : 10);
        if (code < 0x20 || code > 0x7e)
          fail(where, "a character reference to printable ASCII", "&" + entity + ";");
        value += static_cast<char>(code);
      } else {
        fail(where, "one of the XML entities &amp; &lt; &gt; &quot; &apos;", "&" + entity + ";");
      }
      advance(semicolon + 1 - pos_);
    }
  }

  XmlElement read_element(int depth) {
    if (depth > kMaxDepth)
      fail("element", fmt::format("at most {} nested elements", kMaxDepth), "more");
    XmlElement element;
    element.line = line_;
    advance();  // '<'
    element.name = read_name("element");
    const std::string where = "<" + element.name + ">";
    for (;;) {
      const std::size_t before = pos_;
      skip_blanks();
      if (starts("/>")) {
        advance(2);
        return element;
      }
      if (peek() == '>') {
        advance();
        break;
      }
      if (pos_ == before) fail(where, "a blank before each attribute", "none");
      const std::string key = read_name(where + " attribute");
      skip_blanks();
      if (peek() != '=') fail(where + " " + key, "'=' and a quoted value", "no '='");
      advance();
      skip_blanks();
      std::string value = read_value(where + " " + key);
      if (element.attribute(key) != nullptr)
        fail(where + " " + key, "an attribute given once", "twice");
      element.attributes.emplace_back(key, std::move(value));
    }
    for (;;) {
      if (at_end()) fail(where, "</" + element.name + ">", "the end of the file");
      if (starts("</")) {
        advance(2);
        const std::string closing = read_name(where);
        if (closing != element.name)
          fail("</" + closing + ">", "</" + element.name + ">", "</" + closing + ">");
        skip_blanks();
        if (peek() != '>') fail("</" + closing + ">", "'>'", "more");
        advance();
        return element;
      }
      if (starts("<!--")) {
        skip_past("-->", "a closed <!-- comment -->");
      } else if (starts("<![CDATA[") || starts("<!") || starts("<?")) {
        fail(where, "elements and comments only", "a CDATA section or declaration");
      } else if (peek() == '<') {
        element.children.push_back(read_element(depth + 1));
      } else {
        const char c = peek();
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
          fail(where, "elements only (no text between them)", "text");
        advance();
      }
    }
  }

  const std::string& text_;
  const std::string& file_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

// The checks of simgrid_xml_check.hpp over the tree.
class PlatformChecker {
 public:
  explicit PlatformChecker(std::string file) : file_(std::move(file)) {
    folder_ = std::filesystem::path(file_).parent_path().string();
  }

  PlatformXmlSummary check(const XmlElement& root) {
    if (root.name != "platform") fail(root, "", "a <platform> root element", "<" + root.name + ">");
    allow(root, {"version"}, {});
    const std::string* version = root.attribute("version");
    if (version == nullptr || (*version != "4.1" && *version != "4.0" && *version != "4"))
      fail(root, "version", "version=\"4.1\" (SimGrid 3.32's format)",
           version == nullptr ? "none" : "'" + *version + "'");
    for (const XmlElement& child : root.children)
      if (child.name != "zone" && child.name != "cluster") refuse(child, "<zone> or <cluster>");
    if (root.children.size() > 1)
      fail(root.children[1], "",
           "one <zone> or <cluster> inside <platform> (SimGrid's root zone; put the others in it)",
           "a second one");
    if (root.children.empty())
      fail(root, "", "a <zone> or a <cluster> inside <platform>", "nothing");
    for (const XmlElement& child : root.children) {
      if (child.name == "zone")
        zone(child);
      else if (child.name == "cluster")
        cluster(child);
      else
        refuse(child, "<zone> or <cluster>");
    }
    for (const auto& [link, line] : explicit_links_)
      for (const std::string& cluster_id : cluster_ids_)
        if (link == cluster_id + "_backbone" || link.rfind(cluster_id + "_link_", 0) == 0 ||
            link.rfind(cluster_id + "_limiter", 0) == 0)
          throw InputError(file_, fmt::format("line {}: <link id=\"{}\">", line, link),
                           "a link name that cluster " + cluster_id + " does not make",
                           "a name of its links");
    summary_.hosts = hosts_;
    return summary_;
  }

 private:
  [[noreturn]] void fail(const XmlElement& element, const std::string& attribute,
                         const std::string& expected, const std::string& got) const {
    const std::string* id = element.attribute("id");
    std::string where = fmt::format("line {}: <{}", element.line, element.name);
    if (id != nullptr) where += " id=\"" + *id + "\"";
    where += ">";
    if (!attribute.empty()) where += " " + attribute;
    throw InputError(file_, where, expected, got);
  }

  [[noreturn]] void refuse(const XmlElement& element, const std::string& allowed) const {
    std::string why = "an element tauplan does not check";
    if (element.name == "include") why = "<include> (removed in SimGrid 3.18)";
    if (element.name == "config") why = "<config> (tauplan sets SimGrid's configuration)";
    if (element.name == "AS" || element.name == "ASroute") why = "<AS> (write <zone>)";
    throw InputError(file_, fmt::format("line {}: <{}>", element.line, element.name),
                     allowed + " here", why);
  }

  // Unknown attributes and missing required ones are errors.
  void allow(const XmlElement& element, const std::vector<std::string>& required,
             const std::vector<std::string>& optional) const {
    for (const auto& [key, value] : element.attributes) {
      const bool known = std::find(required.begin(), required.end(), key) != required.end() ||
                         std::find(optional.begin(), optional.end(), key) != optional.end();
      if (known) continue;
      std::string list;
      for (const auto* names : {&required, &optional})
        for (const auto& name : *names)
          list += (list.empty() ? "" : ", ") + name;
      if (key == "state_file")
        fail(element, key, "no state_file (tauplan simulates failures from the job's `failures`)",
             "'" + value + "'");
      fail(element, key, "one of the attributes " + list, "an unknown attribute");
    }
    for (const auto& key : required)
      if (element.attribute(key) == nullptr) fail(element, key, "a value (required)", "none");
  }

  void only_children(const XmlElement& element, const std::vector<std::string>& names) const {
    std::string list;
    for (const auto& name : names)
      list += (list.empty() ? "<" : ", <") + name + ">";
    if (list.empty()) list = "nothing";
    for (const XmlElement& child : element.children)
      if (std::find(names.begin(), names.end(), child.name) == names.end())
        refuse(child, list + " inside <" + element.name + ">");
  }

  std::string id_of(const XmlElement& element, const char* key = "id") const {
    const std::string& id = *element.attribute(key);
    if (id.empty()) fail(element, key, "a non-empty name", "''");
    if (id.size() > kMaxNameLength)
      fail(element, key, fmt::format("a name of at most {} characters", kMaxNameLength),
           fmt::format("{} characters", id.size()));
    return id;
  }

  void netpoint(const XmlElement& element, const std::string& name, const std::string& attribute) {
    if (!netpoints_.insert(name).second)
      fail(element, attribute, "a host, router or zone name used once", "'" + name + "' again");
  }

  void one_of(const XmlElement& element, const char* key, const std::vector<std::string>& words) {
    const std::string* value = element.attribute(key);
    if (value == nullptr) return;
    if (std::find(words.begin(), words.end(), *value) != words.end()) return;
    std::string list;
    for (const auto& w : words)
      list += (list.empty() ? "" : ", ") + w;
    fail(element, key, "one of " + list, "'" + *value + "'");
  }

  double quantity(const XmlElement& element, const std::string& key, const std::string& text,
                  Quantity kind, double lo, double hi, const char* unit) const {
    double value = 0;
    std::string why;
    if (!try_parse_quantity(kind, text, Spelling::SimGrid, value, &why))
      fail(element, key, expected_quantity(kind, Spelling::SimGrid),
           "'" + text + "' (" + why + ")");
    if (!(value >= lo && value <= hi))
      fail(element, key, fmt::format("a value in [{:g}, {:g}] {}", lo, hi, unit), "'" + text + "'");
    return value;
  }

  void speeds(const XmlElement& element, std::size_t& count) const {
    const std::string& list = *element.attribute("speed");
    count = 0;
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = list.find(',', start);
      quantity(element, "speed",
               list.substr(start, comma == std::string::npos ? comma : comma - start),
               Quantity::Speed, kMinSpeedFlops, kMaxSpeedFlops, "flop/s");
      ++count;
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }

  double whole(const XmlElement& element, const char* key, double lo, double hi) const {
    const std::string* text = element.attribute(key);
    double value = 0;
    if (text == nullptr) return lo;
    if (!parse_number(*text, value) || value != std::floor(value) || value < lo || value > hi)
      fail(element, key, fmt::format("a whole number in [{:g}, {:g}]", lo, hi), "'" + *text + "'");
    return value;
  }

  void bandwidth(const XmlElement& element, const char* key) const {
    if (const std::string* text = element.attribute(key))
      quantity(element, key, *text, Quantity::Bandwidth, kMinBandwidthBps, kMaxBandwidthBps, "B/s");
  }

  void latency(const XmlElement& element, const char* key) const {
    if (const std::string* text = element.attribute(key))
      quantity(element, key, *text, Quantity::Seconds, 0, kMaxLatencySeconds, "s");
  }

  // A profile file: "DATE VALUE" lines, PERIODICITY/LOOPAFTER lines, '#' or '%' comments.
  void profile(const XmlElement& element, const char* key, Quantity kind, double lo, double hi) {
    const std::string* name = element.attribute(key);
    if (name == nullptr) return;
    namespace fs = std::filesystem;
    if (name->empty() || name->size() > kMaxPathLength)
      fail(element, key, "the path of a profile file", "'" + *name + "'");
    if (fs::path(*name).is_absolute())
      fail(element, key,
           "a path relative to the working folder or the platform's folder (SimGrid prefixes "
           "its search path to every profile path)",
           "'" + *name + "'");
    std::error_code error;
    fs::path path = fs::path(*name);
    if (!fs::is_regular_file(path, error)) path = fs::path(folder_) / *name;
    if (!fs::is_regular_file(path, error))
      fail(element, key, "a readable profile file (looked up in . then in the platform's folder)",
           "'" + *name + "' (not found)");
    const std::string text = yaml_util::read_file(path.string(), key);
    const std::string origin = path.string();
    std::size_t start = 0;
    int line = 0;
    double last_date = 0;
    while (start < text.size()) {
      ++line;
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string row = text.substr(start, end - start);
      start = end + 1;
      const auto first = row.find_first_not_of(" \t\r");
      if (first == std::string::npos || row[first] == '#' || row[first] == '%') continue;
      row = row.substr(first, row.find_last_not_of(" \t\r") + 1 - first);
      const std::string where = fmt::format("line {}", line);
      double number = 0;
      bool keyword = false;
      for (const char* word : {"PERIODICITY", "LOOPAFTER"}) {
        const std::string prefix = std::string(word) + " ";
        if (row.rfind(prefix, 0) != 0) continue;
        keyword = true;
        if (!parse_number(row.substr(prefix.size()), number) || number < 0)
          throw InputError(origin, where, std::string(word) + " and a number of seconds >= 0",
                           "'" + row + "'");
      }
      if (keyword) continue;
      const auto blank = row.find_first_of(" \t");
      double date = 0;
      if (blank == std::string::npos || !parse_number(row.substr(0, blank), date) || date < 0 ||
          !parse_number(row.substr(blank + 1), number))
        throw InputError(origin, where, "DATE VALUE (two numbers, the date >= 0 in seconds)",
                         "'" + row + "'");
      if (date < last_date)
        throw InputError(origin, where, fmt::format("a date >= the previous one ({:g})", last_date),
                         fmt::format("{:g}", date));
      if (!(number >= lo && number <= hi))
        throw InputError(origin, where,
                         fmt::format("a value in [{:g}, {:g}] ({})", lo, hi,
                                     kind == Quantity::Speed ? "a fraction of the host's speed"
                                     : kind == Quantity::Bandwidth ? "bytes per second"
                                                                   : "seconds"),
                         "'" + row + "'");
      last_date = date;
    }
  }

  void zone(const XmlElement& z) {
    allow(z, {"id", "routing"}, {});
    netpoint(z, id_of(z), "id");
    one_of(z, "routing", {"Full", "Floyd", "Dijkstra", "DijkstraCache", "None"});
    only_children(z, {"prop", "zone", "cluster", "host", "router", "link", "route", "zoneRoute"});
    std::size_t netpoints = 0;
    std::set<std::pair<std::string, std::string>> routes;
    for (const XmlElement& child : z.children) {
      if (child.name == "prop") continue;  // checked by props() below
      if (child.name == "zone")
        zone(child);
      else if (child.name == "cluster")
        cluster(child);
      else if (child.name == "host")
        host(child);
      else if (child.name == "router")
        router(child);
      else if (child.name == "link")
        link(child);
      else
        route(child, routes);
      if (child.name == "zone" || child.name == "cluster" || child.name == "host" ||
          child.name == "router")
        ++netpoints;
    }
    props(z);
    const std::string& routing = *z.attribute("routing");
    if ((routing == "Floyd" || routing == "Full") && netpoints > kMaxDenseNetpoints)
      fail(z, "routing",
           fmt::format("at most {} hosts, routers and zones in a {} zone (use Dijkstra, or "
                       "clusters, for more)",
                       kMaxDenseNetpoints, routing),
           std::to_string(netpoints));
  }

  void count_hosts(const XmlElement& element, double more) {
    hosts_ += static_cast<std::size_t>(more);
    if (hosts_ > kMaxHosts)
      fail(element, "", fmt::format("a platform of at most {} hosts", kMaxHosts), "more");
  }

  void host(const XmlElement& h) {
    allow(h, {"id", "speed"}, {"core", "pstate", "speed_file", "availability_file", "coordinates"});
    netpoint(h, id_of(h), "id");
    std::size_t pstates = 0;
    speeds(h, pstates);
    whole(h, "core", 1, kMaxCores);
    whole(h, "pstate", 0, static_cast<double>(pstates) - 1);
    for (const char* key : {"speed_file", "availability_file"})
      if (h.attribute(key) != nullptr) {
        profile(h, key, Quantity::Speed, 1e-6, 1e6);
        summary_.speed_profiles = true;
      }
    only_children(h, {"prop"});
    props(h);
    count_hosts(h, 1);
  }

  void router(const XmlElement& r) {
    allow(r, {"id"}, {"coordinates"});
    netpoint(r, id_of(r), "id");
    only_children(r, {});
  }

  void link(const XmlElement& l) {
    allow(l, {"id", "bandwidth"}, {"latency", "sharing_policy", "bandwidth_file", "latency_file"});
    const std::string id = id_of(l);
    if (!explicit_links_.emplace(id, l.line).second)
      fail(l, "id", "a link name used once", "'" + id + "' again");
    const std::string* bandwidth_list = l.attribute("bandwidth");
    if (bandwidth_list != nullptr && bandwidth_list->find(',') != std::string::npos)
      fail(l, "bandwidth", "one bandwidth (lists are for wifi links)", "'" + *bandwidth_list + "'");
    bandwidth(l, "bandwidth");
    latency(l, "latency");
    one_of(l, "sharing_policy", {"SHARED", "SPLITDUPLEX", "FATPIPE"});
    if (l.attribute("bandwidth_file") != nullptr) {
      profile(l, "bandwidth_file", Quantity::Bandwidth, kMinBandwidthBps, kMaxBandwidthBps);
      summary_.link_profiles = true;
    }
    if (l.attribute("latency_file") != nullptr) {
      profile(l, "latency_file", Quantity::Seconds, 0, kMaxLatencySeconds);
      summary_.link_profiles = true;
      summary_.latency_profiles = true;
    }
    only_children(l, {"prop"});
    props(l);
  }

  // `declared` holds the (src, dst) pairs the zone's routes already gave: SimGrid aborts on a
  // second route between the same ends (a symmetrical route gives both directions).
  void route(const XmlElement& r, std::set<std::pair<std::string, std::string>>& declared) {
    if (r.name == "zoneRoute")
      allow(r, {"src", "dst", "gw_src", "gw_dst"}, {"symmetrical"});
    else
      allow(r, {"src", "dst"}, {"symmetrical"});
    one_of(r, "symmetrical", {"YES", "NO", "yes", "no"});
    const std::string& src = *r.attribute("src");
    const std::string& dst = *r.attribute("dst");
    const std::string* symmetrical = r.attribute("symmetrical");
    const bool both = symmetrical == nullptr || *symmetrical == "YES" || *symmetrical == "yes";
    for (const auto& [a, b] : {std::make_pair(src, dst), std::make_pair(dst, src)}) {
      if (!declared.emplace(a, b).second)
        fail(r, "src",
             "one route between two ends (routes are symmetrical unless symmetrical=\"NO\")",
             "a second route between " + a + " and " + b);
      if (!both) break;
    }
    only_children(r, {"link_ctn"});
    for (const XmlElement& child : r.children) {
      allow(child, {"id"}, {"direction"});
      id_of(child);
      one_of(child, "direction", {"UP", "DOWN", "NONE"});
      only_children(child, {});
    }
  }

  // The <prop>s of an element: each id once (SimGrid would keep one of two silently).
  void props(const XmlElement& parent) const {
    std::set<std::string> ids;
    for (const XmlElement& child : parent.children) {
      if (child.name != "prop") continue;
      prop(child);
      if (!ids.insert(*child.attribute("id")).second)
        fail(child, "id", "a prop given once per element",
             "'" + *child.attribute("id") + "' again");
    }
  }

  void prop(const XmlElement& p) const {
    allow(p, {"id", "value"}, {});
    id_of(p);
    const std::string* value = p.attribute("value");
    if (value != nullptr && value->size() > kMaxPathLength)
      fail(p, "value", fmt::format("at most {} characters", kMaxPathLength),
           fmt::format("{} characters", value->size()));
    only_children(p, {});
  }

  // "0-3;8,10": ranges and single numbers separated by ';' or ','.
  std::vector<long long> radicals(const XmlElement& c) const {
    const std::string& text = *c.attribute("radical");
    std::vector<long long> out;
    std::size_t start = 0;
    for (;;) {
      const std::size_t sep = text.find_first_of(";,", start);
      const std::string piece = text.substr(start, sep == std::string::npos ? sep : sep - start);
      const std::size_t dash = piece.find('-', piece.find_first_not_of(" \t") + 1);
      double a = 0;
      double b = 0;
      bool ok = false;
      if (dash == std::string::npos) {
        ok = parse_number(piece, a);
        b = a;
      } else {
        ok = parse_number(piece.substr(0, dash), a) && parse_number(piece.substr(dash + 1), b);
      }
      if (!ok || a != std::floor(a) || b != std::floor(b) || a < 0 || b < a || b > kMaxRadical)
        fail(c, "radical",
             fmt::format("numbers or ranges A-B with 0 <= A <= B <= {:g}, separated by ';' (e.g. "
                         "0-3;8)",
                         kMaxRadical),
             "'" + text + "'");
      if (static_cast<double>(out.size()) + (b - a + 1) > static_cast<double>(kMaxHosts))
        fail(c, "radical", fmt::format("at most {} hosts", kMaxHosts), "'" + text + "'");
      for (auto i = static_cast<long long>(a); i <= static_cast<long long>(b); ++i)
        out.push_back(i);
      if (sep == std::string::npos) break;
      start = sep + 1;
    }
    return out;
  }

  // Positive whole numbers separated by `separator`.
  std::vector<long long> whole_list(const XmlElement& c, const std::string& text, char separator,
                                    const std::string& expected) const {
    std::vector<long long> out;
    std::size_t start = 0;
    for (;;) {
      const std::size_t sep = text.find(separator, start);
      double value = 0;
      if (!parse_number(text.substr(start, sep == std::string::npos ? sep : sep - start), value) ||
          value != std::floor(value) || value < 1 || value > kMaxRadical)
        fail(c, "topo_parameters", expected, "'" + text + "'");
      out.push_back(static_cast<long long>(value));
      if (sep == std::string::npos) break;
      start = sep + 1;
    }
    return out;
  }

  void topology(const XmlElement& c, std::size_t hosts) const {
    const std::string* kind = c.attribute("topology");
    if (kind == nullptr || *kind == "FLAT") return;
    const std::string* parameters = c.attribute("topo_parameters");
    if (parameters == nullptr)
      fail(c, "topo_parameters", "parameters for topology " + *kind, "none");
    auto product = [](const std::vector<long long>& v) {
      double p = 1;
      for (long long x : v)
        p *= static_cast<double>(x);
      return p;
    };
    const auto count = static_cast<double>(hosts);
    if (*kind == "TORUS") {
      const std::string expected = fmt::format(
          "dimensions D1,D2,... (whole numbers >= 1) whose product is the cluster's {} hosts",
          hosts);
      if (product(whole_list(c, *parameters, ',', expected)) != count)
        fail(c, "topo_parameters", expected, "'" + *parameters + "'");
      return;
    }
    if (*kind == "FAT_TREE") {
      const std::string expected = fmt::format(
          "LEVELS;DOWN1,...;UP1,...;COUNT1,... with LEVELS numbers in each list (whole numbers "
          ">= 1) and the DOWN product equal to the cluster's {} hosts",
          hosts);
      std::vector<std::string> parts;
      std::size_t start = 0;
      for (;;) {
        const std::size_t semi = parameters->find(';', start);
        parts.push_back(parameters->substr(start, semi == std::string::npos ? semi : semi - start));
        if (semi == std::string::npos) break;
        start = semi + 1;
      }
      if (parts.size() != 4) fail(c, "topo_parameters", expected, "'" + *parameters + "'");
      const auto levels = whole_list(c, parts[0], ',', expected);
      if (levels.size() != 1 || levels[0] > 16)
        fail(c, "topo_parameters", expected, "'" + *parameters + "'");
      for (std::size_t i = 1; i < 4; ++i) {
        const auto list = whole_list(c, parts[i], ',', expected);
        if (static_cast<long long>(list.size()) != levels[0])
          fail(c, "topo_parameters", expected, "'" + *parameters + "'");
        if (i == 1 && product(list) != count)
          fail(c, "topo_parameters", expected, "'" + *parameters + "'");
      }
      return;
    }
    if (*kind == "DRAGONFLY") {
      const std::string expected = fmt::format(
          "GROUPS,LINKS;CHASSIS,LINKS;ROUTERS,LINKS;NODES (whole numbers >= 1) with GROUPS x "
          "CHASSIS x ROUTERS x NODES equal to the cluster's {} hosts",
          hosts);
      std::vector<long long> numbers;
      std::size_t start = 0;
      std::vector<std::size_t> sizes;
      for (;;) {
        const std::size_t semi = parameters->find(';', start);
        const auto list = whole_list(
            c, parameters->substr(start, semi == std::string::npos ? semi : semi - start), ',',
            expected);
        sizes.push_back(list.size());
        numbers.insert(numbers.end(), list.begin(), list.end());
        if (semi == std::string::npos) break;
        start = semi + 1;
      }
      if (sizes != std::vector<std::size_t>{2, 2, 2, 1} ||
          static_cast<double>(numbers[0]) * static_cast<double>(numbers[2]) *
                  static_cast<double>(numbers[4]) * static_cast<double>(numbers[6]) !=
              count)
        fail(c, "topo_parameters", expected, "'" + *parameters + "'");
      return;
    }
    fail(c, "topology", "one of FLAT, TORUS, FAT_TREE, DRAGONFLY", "'" + *kind + "'");
  }

  void cluster(const XmlElement& c) {
    allow(c, {"id", "prefix", "suffix", "radical", "speed", "bw", "lat"},
          {"core", "sharing_policy", "bb_bw", "bb_lat", "bb_sharing_policy", "router_id",
           "limiter_link", "loopback_bw", "loopback_lat", "topology", "topo_parameters"});
    const std::string id = id_of(c);
    netpoint(c, id, "id");
    cluster_ids_.push_back(id);
    const std::string& prefix = *c.attribute("prefix");
    const std::string& suffix = *c.attribute("suffix");
    if (prefix.size() + suffix.size() + 8 > kMaxNameLength)
      fail(c, "prefix", fmt::format("host names of at most {} characters", kMaxNameLength),
           "a longer prefix and suffix");
    const std::vector<long long> numbers = radicals(c);
    count_hosts(c, static_cast<double>(numbers.size()));
    for (long long n : numbers)
      netpoint(c, prefix + std::to_string(n) + suffix, "radical");
    if (c.attribute("router_id") != nullptr)
      netpoint(c, id_of(c, "router_id"), "router_id");
    else
      netpoint(c, prefix + id + "_router" + suffix, "id");
    std::size_t pstates = 0;
    speeds(c, pstates);
    whole(c, "core", 1, kMaxCores);
    bandwidth(c, "bw");
    latency(c, "lat");
    bandwidth(c, "bb_bw");
    latency(c, "bb_lat");
    if ((c.attribute("bb_bw") == nullptr) != (c.attribute("bb_lat") == nullptr))
      fail(c, c.attribute("bb_bw") == nullptr ? "bb_lat" : "bb_bw",
           "bb_bw and bb_lat together (a backbone)", "only one of them");
    bandwidth(c, "loopback_bw");
    latency(c, "loopback_lat");
    bandwidth(c, "limiter_link");
    one_of(c, "sharing_policy", {"SHARED", "SPLITDUPLEX", "FATPIPE"});
    one_of(c, "bb_sharing_policy", {"SHARED", "FATPIPE"});
    topology(c, numbers.size());
    only_children(c, {"prop"});
    props(c);
  }

  std::string file_;
  std::string folder_;
  std::set<std::string> netpoints_;
  std::map<std::string, int> explicit_links_;  // name -> line
  std::vector<std::string> cluster_ids_;
  std::size_t hosts_ = 0;
  PlatformXmlSummary summary_;
};

}  // namespace

PlatformXmlSummary check_simgrid_platform_xml(const std::string& text, const std::string& file) {
  const XmlElement root = XmlReader(text, file).read_document();
  return PlatformChecker(file).check(root);
}

}  // namespace tauplan::model
