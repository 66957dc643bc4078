#!/usr/bin/env bash
# pack_full_build.sh: a full tauplan (built here with CUDA, where the Debian packages are) and
# what it needs at run time, gathered into one folder that travels to a GPU machine which has
# CUDA but none of those packages; gpu_check.sh's `measure` stage runs it there.
#
#   bash exec/cuda/pack_full_build.sh BUILD_DIR [DEST]     (default DEST: .gpu-carry, ignored)
#
# DEST/full.tar.xz holds tauplan, lib/ (every shared library `ldd` resolves outside the C
# library, the C++ run time and CUDA's own: those come from the GPU machine, whose are newer)
# and manifest.txt (commit, compiler, each file's size); DEST/data/ the Fashion-MNIST IDX files
# of Debian's dataset-fashion-mnist (or $TAUPLAN_DATA_DIR); DEST/cuda-deps.tar.xz the Eigen and
# nlohmann-json headers the CUDA-only build needs (gpu_check.sh unpacks it into .cuda-deps/).
# Compressed because what travels is limited (64 MiB with the working tree): about 50 MB here.
# Refuses a tauplan built without CUDA.
# Leaves out: OpenMPI's plugins (the GPU stage runs without a launcher, so MPI is never
# initialised there); a binary built against a newer C library than the GPU machine's.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:?usage: pack_full_build.sh BUILD_DIR [DEST]}
dest=${2:-$root/.gpu-carry}
binary=$build/cli/tauplan
[ -x "$binary" ] || { echo "pack_full_build.sh: $binary: not built (cmake --build $build --target tauplan)" >&2; exit 2; }
if ! ldd "$binary" | grep -q 'libcudart'; then
  echo "pack_full_build.sh: $binary: built without CUDA (no libcudart among its libraries); configure where nvcc is found" >&2
  exit 2
fi
data=${TAUPLAN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [ -f "$data/$f" ] || [ -f "$data/$f.gz" ] || { echo "pack_full_build.sh: $data: no $f(.gz) (install dataset-fashion-mnist)" >&2; exit 2; }
done

rm -rf "$dest"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$dest/data"
cp "$binary" "$stage/tauplan"
strip "$stage/tauplan" 2> /dev/null || true
# Libraries that stay behind: the C library's own, the C++ run time, the GPU driver's and CUDA's.
keep_out='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+\.|libgcc_s\.|libcuda\.|libcudart\.|libcublas|libcublasLt|libnccl\.)'
ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
  if [[ "$name" =~ $keep_out ]]; then continue; fi
  cp -L "$path" "$stage/lib/$name"
  strip --strip-unneeded "$stage/lib/$name" 2> /dev/null || true
done
for f in "$data"/*-ubyte*; do cp "$f" "$dest/data/"; done
{
  echo "commit $(git -C "$root" rev-parse HEAD 2> /dev/null || echo unknown)$(git -C "$root" diff --quiet 2> /dev/null || echo ' (with uncommitted changes)')"
  echo "built $(grep -m1 '^CMAKE_CXX_COMPILER:' "$build/CMakeCache.txt" | cut -d= -f2) $(grep -m1 '^CMAKE_BUILD_TYPE:' "$build/CMakeCache.txt" | cut -d= -f2)"
  echo "glibc $(ldd --version | head -1 | awk '{print $NF}')"
  (cd "$stage" && find . -type f -printf '%s %p\n' | sort -k2)
} > "$stage/manifest.txt"
tar -C "$stage" -cf - tauplan lib manifest.txt | xz -6 -T0 > "$dest/full.tar.xz"
headers=$(mktemp -d)
for h in eigen3 nlohmann; do
  for d in "$root/.cuda-deps/$h" "/usr/include/$h"; do
    [ -d "$d" ] && { cp -r "$d" "$headers/$h"; break; }
  done
  [ -d "$headers/$h" ] || { echo "pack_full_build.sh: no $h headers (install libeigen3-dev and nlohmann-json3-dev)" >&2; exit 2; }
done
tar -C "$headers" -cf - eigen3 nlohmann | xz -6 -T0 > "$dest/cuda-deps.tar.xz"
rm -rf "$headers"
echo "pack_full_build.sh: $dest: $(du -sh "$dest" | cut -f1) ($(ls "$stage/lib" | wc -l) libraries, $(du -sh "$stage" | cut -f1) unpacked)"
