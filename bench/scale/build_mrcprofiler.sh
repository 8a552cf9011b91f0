#!/bin/sh
# Builds libCacheSim's mrcProfiler (Release) from the libcachesim 0.3.5 source distribution, into bench/data/
# (gitignored). Needs: apt-get install -y libglib2.0-dev libzstd-dev cmake (and a C/C++ compiler).
# The binary ends up at bench/data/libcachesim-0.3.5/src/libCacheSim/_build/bin/mrcProfiler (printed last).
set -eu
here=$(cd "$(dirname "$0")/../data" 2>/dev/null || { mkdir -p "$(dirname "$0")/../data"; cd "$(dirname "$0")/../data"; }; pwd)
cd "$here"
[ -f libcachesim-0.3.5.tar.gz ] || pip download libcachesim==0.3.5 --no-deps --no-binary :all: -d .
[ -d libcachesim-0.3.5 ] || tar xzf libcachesim-0.3.5.tar.gz
cd libcachesim-0.3.5/src/libCacheSim
# Tests off (they fetch nothing but double the build); tcmalloc is optional and left out.
cmake -S . -B _build -DCMAKE_BUILD_TYPE=Release -DENABLE_TESTS=OFF >/dev/null
cmake --build _build --target mrcProfiler -j "${JOBS:-2}"
find "$PWD/_build" -type f -name mrcProfiler -perm -u+x
