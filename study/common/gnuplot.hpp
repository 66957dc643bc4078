// gnuplot.hpp: figures drawn by gnuplot for the verbs that plot (reproduce, validate); header
// only, as cli/ compiles verb_*.cpp and common.cpp.
//
// A verb writes a script and its CSV data into a folder; the script draws the same figure to
// PNG and SVG. When gnuplot is absent or fails the script and data stay, with a note saying how
// to draw them. What it leaves out: interactive terminals and any plotting library.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace tauplan::study {

/// Runs gnuplot on `script` in `folder`; false (and a note) when gnuplot is absent or fails.
inline bool run_gnuplot(const std::filesystem::path& folder, const std::string& script,
                        std::vector<std::string>& notes) {
  static const bool have = std::system("command -v gnuplot >/dev/null 2>&1") == 0;
  if (!have) {
    notes.push_back("gnuplot not found: wrote " + (folder / script).string() +
                    " and its data; run `gnuplot " + script + "` there to draw the figures");
    return false;
  }
  const std::string command =
      "cd '" + folder.string() + "' && gnuplot '" + script + "' 2>gnuplot-" + script + ".log";
  if (std::system(command.c_str()) != 0) {
    notes.push_back("gnuplot failed on " + (folder / script).string() + " (see its .log)");
    return false;
  }
  std::filesystem::remove(folder / ("gnuplot-" + script + ".log"));
  return true;
}

/// The point style of the i-th series of a scatter ("pt 7 lc rgb '#1f77b4'", ...): a filled or
/// open shape and a colour of their own for each of the first eight, then round again.
inline std::string point_style(std::size_t i) {
  static const char* const styles[] = {
      "pt 7 lc rgb '#1f77b4'",        "pt 6 ps 1.6 lc rgb '#ff7f0e'",
      "pt 5 lc rgb '#2ca02c'",        "pt 4 ps 1.6 lc rgb '#d62728'",
      "pt 8 ps 1.4 lc rgb '#9467bd'", "pt 3 ps 1.4 lc rgb '#7f7f7f'",
      "pt 9 lc rgb '#8c564b'",        "pt 12 ps 1.4 lc rgb '#e377c2'"};
  return styles[i % (sizeof(styles) / sizeof(styles[0]))];
}

/// A gnuplot script that draws `body` twice, PNG and SVG named after `stem`; `verb` says who
/// wrote it.
inline std::string two_terminals(const std::string& verb, const std::string& stem,
                                 const std::string& size, const std::string& body) {
  return fmt::format(
      "# {0}.gp: written by `tauplan {3}`; draws {0}.png and {0}.svg from the CSV beside it.\n"
      "set datafile separator ','\n"
      "set terminal pngcairo size {1} font 'Sans,10'\nset output '{0}.png'\n{2}\n"
      "set terminal svg size {1} font 'Sans,10'\nset output '{0}.svg'\nreplot\n"
      "unset output\n",
      stem, size, body, verb);
}

}  // namespace tauplan::study
