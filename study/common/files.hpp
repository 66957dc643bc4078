// files.hpp: reading and writing the files studies produce (results, plots, points).
//
// Every failure to write names the path and the flag that chose it, as bad input (exit 2).
// What it leaves out: locking between processes (a sweep's points are written atomically by
// rename, which is enough for one writer per point).
#pragma once

#include <string>

namespace tauplan::study {

/// The whole of a file (empty when it cannot be read).
std::string read_text(const std::string& path);
/// Writes a result file; an InputError when it cannot: `command line: KEY: expected a writable
/// folder, got PATH` for a flag (`key` "--out"), else `PATH: KEY: ...`. The same for the two below.
void write_text(const std::string& path, const std::string& text, const std::string& key = "--out");
/// Writes through a temporary file and a rename, so a reader never sees half a file.
void write_atomically(const std::string& path, const std::string& text);
/// Creates the folder `path`; an InputError naming `key` and `path` when it cannot.
void make_folder(const std::string& path, const std::string& key);
/// Creates the folder that will hold `path` (a file); an InputError naming `key` and the folder
/// when it cannot (a file in the way, no permission).
void make_folder_for(const std::string& path, const std::string& key);

/// A job key's value typed on the command line (a --KEY flag or a --set value): for a key that
/// names an input file (workload, platform, convergence_table: a regular file; data_dir: a
/// folder), a relative path naming one in the current folder is made absolute, so that the
/// current folder wins over the job file's (whose own relative paths are the job file's) and a
/// child process started elsewhere reads the same file. Anything else (a catalog name, a file only
/// beside the job, another key) is returned as typed.
std::string command_line_input(const std::string& key, const std::string& value);

/// `s` without leading and trailing blanks and tabs.
std::string trim(const std::string& s);
/// The last non-empty line of a text (a child process's one-line error).
std::string last_line(const std::string& text);
/// A CSV field, quoted when it holds a comma, a quote or a newline.
std::string csv_field(const std::string& s);

}  // namespace tauplan::study
