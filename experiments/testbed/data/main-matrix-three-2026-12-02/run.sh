#!/usr/bin/env bash
# run.sh TAUPLAN: the measurement of experiments/testbed/README.md, "The main matrix three times
# in a row" (protocol written before it ran): the 18-configuration matrix validated three times
# back to back, each run with fresh network and compute calibrations, then runs_spread.sh over
# the three. Root; run from the repository root; writes beside itself. The loop it ran stood here;
# it now lives in experiments/testbed/validate_repeatedly.sh, the matrix and prefix as arguments.
exec bash experiments/testbed/validate_repeatedly.sh "$1" experiments/testbed/matrix.yaml tpr- \
  "$(dirname "$0")" 3
