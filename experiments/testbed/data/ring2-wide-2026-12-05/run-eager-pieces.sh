#!/usr/bin/env bash
# run-eager-pieces.sh TAUPLAN: run.sh again, into eager-pieces/, each ring-of-2 step sent as
# pieces of 16,000 floats (64,000 bytes, below OpenMPI's 64 KiB eager limit with its header), all
# posted at once each way: no piece waits for an answer from its receiver. Written after reading
# run.sh's and run-send-pipeline.sh's results (the two directions take turns once out of phase,
# whichever protocol carries the bulk), to test whether messages that need no answer remove it.
here=$(cd "$(dirname "$0")" && pwd)
export RING_STEPS_PIECE=16000
exec bash "$here/run.sh" "${1:?usage: run-eager-pieces.sh TAUPLAN}" "$here/eager-pieces"
