// files_test.cpp: the files studies write (study/common/files.hpp): CSV fields quoted as RFC 4180
// wants (and only when needed), trim and last_line as the children's one-line errors need them,
// whole files written and read back, atomically (no temporary left), and a folder or file that
// cannot be written is an InputError naming the path and the flag that chose it.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "study/common/files.hpp"
#include "study/common/study_test_support.hpp"

namespace fs = std::filesystem;

TEST_CASE("files: a CSV field is quoted only when it holds a comma, a quote or a newline") {
  using tauplan::study::csv_field;
  CHECK(csv_field("sync ring") == "sync ring");
  CHECK(csv_field("") == "");
  CHECK(csv_field("2 x v100, 4 x k80") == "\"2 x v100, 4 x k80\"");
  CHECK(csv_field("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(csv_field("a\nb") == "\"a\nb\"");
}

TEST_CASE(
    "files: trim drops blanks and tabs at both ends, last_line finds the last non-empty line") {
  using tauplan::study::last_line;
  using tauplan::study::trim;
  CHECK(trim(" \t x y \t") == "x y");
  CHECK(trim(" \t ") == "");
  CHECK(trim("x") == "x");
  CHECK(last_line("progress 1\nprogress 2\ntauplan: error: f: k: expected v\n\n  \n") ==
        "tauplan: error: f: k: expected v");
  CHECK(last_line("") == "");
  CHECK(last_line("one") == "one");
}

TEST_CASE("files: whole files written, atomically, and read back") {
  const tauplan::test::Scratch scratch("files");
  const std::string path = scratch.path("a/b/result.csv");
  tauplan::study::make_folder_for(path, "--out");
  CHECK(fs::is_directory(scratch.path("a/b")));
  const std::string text = std::string("x,y\n1,2\n") + '\0' + "binary";
  tauplan::study::write_text(path, text);
  CHECK(tauplan::study::read_text(path) == text);
  tauplan::study::write_atomically(path, "replaced\n");
  CHECK(tauplan::study::read_text(path) == "replaced\n");
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(scratch.path("a/b")))
    entries += entry.is_regular_file() ? 1 : 0;
  CHECK(entries == 1);  // no temporary file left beside it
  CHECK(tauplan::study::read_text(scratch.path("absent")).empty());
}

TEST_CASE("files: what cannot be written is an InputError naming the flag and the path") {
  const tauplan::test::Scratch scratch("files-bad");
  const std::string blocker = scratch.write("blocker", "a file where a folder should be\n");
  const std::string inside = blocker + "/out.csv";
  const std::string write =
      tauplan::test::input_error([&] { tauplan::study::write_text(inside, "x", "--results"); });
  CHECK(write == "command line: --results: expected a writable folder, got " + inside);
  const std::string folder =
      tauplan::test::input_error([&] { tauplan::study::make_folder(blocker + "/sub", "--out"); });
  CHECK(folder.rfind(
            "command line: --out: expected a folder that can be created, got " + blocker + "/sub (",
            0) == 0);
  const std::string parent = tauplan::test::input_error(
      [&] { tauplan::study::make_folder_for(blocker + "/sub/file.json", "--out"); });
  CHECK(parent.rfind(
            "command line: --out: expected a folder that can be created, got " + blocker + "/sub (",
            0) == 0);
  // A key that is not a flag: the path comes first, as for a job file's key.
  CHECK(tauplan::test::names_file_and_key(
      tauplan::test::input_error([&] { tauplan::study::write_text(inside, "x", "results"); }),
      inside, "results"));
  // A bare file name has no folder to make.
  CHECK(tauplan::test::input_error([] {
          tauplan::study::make_folder_for("file.json", "--out");
        }).empty());
}
