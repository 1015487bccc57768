#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# A real REAPI v2 server for the tests: Bazel's own RemoteWorker (Apache-2.0,
# Java source from Debian's bazel-bootstrap-source, its libraries from
# bazel-bootstrap), compiled once into CLASSES and bound to loopback only
# (upstream binds every interface: the one line is changed). Then exec'd with
# the remaining arguments (--listen_port=P --work_path=W --cas_path=C ...).
#   reapi_worker.sh CLASSES [RemoteWorker options...]
set -euo pipefail
classes=$1
shift
src=/usr/src/bazel-bootstrap/src/tools/remote/src/main/java
jar=/usr/share/bazel/A-server.jar
for f in "$src" "$jar"; do
  [[ -e $f ]] || { echo "reapi_worker.sh: $f missing (apt-get install bazel-bootstrap bazel-bootstrap-source)" >&2; exit 3; }
done
if [[ ! -e $classes/.built ]]; then
  mkdir -p "$(dirname "$classes")"
  (
    flock 9
    if [[ ! -e $classes/.built ]]; then
      tmp=$(mktemp -d "$classes.tmp.XXXXXX")
      cp -r "$src" "$tmp/src"
      main=$tmp/src/com/google/devtools/build/remote/worker/RemoteWorker.java
      sed -i 's|NettyServerBuilder.forPort(workerOptions.listenPort)|NettyServerBuilder.forAddress(new java.net.InetSocketAddress("127.0.0.1", workerOptions.listenPort))|' "$main"
      grep -q 'InetSocketAddress("127.0.0.1"' "$main" || { echo "reapi_worker.sh: bind patch did not apply" >&2; exit 3; }
      mkdir "$tmp/classes"
      javac -nowarn -d "$tmp/classes" -cp "$jar" $(find "$tmp/src" -name '*.java') >"$tmp/javac.log" 2>&1 ||
        { cat "$tmp/javac.log" >&2; exit 3; }
      touch "$tmp/classes/.built"
      rm -rf "$classes"
      mv "$tmp/classes" "$classes"
      rm -rf "$tmp"
    fi
  ) 9>"$classes.lock"
fi
exec java -cp "$classes:$jar" com.google.devtools.build.remote.worker.RemoteWorker "$@"
