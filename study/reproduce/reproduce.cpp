// reproduce.cpp: which reproductions a request runs (see reproduce.hpp).
#include "study/reproduce/reproduce.hpp"

#include <filesystem>

#include "model/base/error.hpp"
#include "study/common/files.hpp"
#include "study/reproduce/reproduce_support.hpp"

namespace tauplan::study {

void run_reproduce(const ReproduceRequest& args, std::ostream& out,
                   std::vector<std::string>& notes) {
  const bool sparknet = args.name.empty() || args.name == sparknet_experiment();
  const bool hetseq = args.name.empty() || args.name == hetseq_experiment();
  if (!sparknet && !hetseq)
    throw InputError("command line", "experiment",
                     std::string(sparknet_experiment()) + " or " + hetseq_experiment(), args.name);
  if (args.fresh && !sparknet)
    throw InputError("command line", "--fresh",
                     "no --fresh for hetseq alone (it measures nothing; sparknet's cached counts "
                     "are what --fresh measures again)",
                     "--fresh");
  if (args.jobs < 1)
    throw InputError("command line", "--jobs", "at least 1", std::to_string(args.jobs));
  const std::filesystem::path dir = reproduction::experiments_dir(args);
  for (const auto& [wanted, name] : {std::pair<bool, const char*>{sparknet, sparknet_experiment()},
                                     std::pair<bool, const char*>{hetseq, hetseq_experiment()}})
    if (wanted && !std::filesystem::is_directory(dir / name))
      throw InputError("command line", "--experiments",
                       "a folder with sparknet/ and hetseq/ job files", dir.string());
  make_folder(args.out, "--out");  // a file in the way or no permission: one line, exit 2
  if (sparknet) reproduce_sparknet(args, out, notes);
  if (hetseq) reproduce_hetseq(args, out, notes);
}

}  // namespace tauplan::study
