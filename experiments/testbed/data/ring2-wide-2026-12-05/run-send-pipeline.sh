#!/usr/bin/env bash
# run-send-pipeline.sh TAUPLAN: run.sh again, into send-pipeline/, with OpenMPI's RDMA pipeline
# protocol off for every message (btl_tcp_min_rdma_pipeline_size above any message: each one is
# sent as fragments of btl_tcp_max_send_size, 128 KiB, with send/receive semantics). Written
# after reading run.sh's first results (the two directions of r-h0 <-> t-h0 take turns once out
# of phase), to test whether the one large "put" fragment of a message is what the other
# direction's answer waits behind.
here=$(cd "$(dirname "$0")" && pwd)
export OMPI_MCA_btl_tcp_min_rdma_pipeline_size=2147483647
exec bash "$here/run.sh" "${1:?usage: run-send-pipeline.sh TAUPLAN}" "$here/send-pipeline"
