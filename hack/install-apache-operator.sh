#!/usr/bin/env bash
# Installs the Apache Flink Kubernetes Operator and what it needs to run as a plain java process,
# from Maven Central only (the migration test starts it against the local cluster). Central has
# no shaded operator jar, so every runtime dependency of test/migration/testdata/pom.xml is
# copied into DEST/lib (Maven's local repository caches them) and the test puts DEST/lib/* on
# the classpath.
# Usage: hack/install-apache-operator.sh OPERATOR_VERSION DEST
set -euo pipefail
version=$1 dest=$2
pom=$(cd "$(dirname "$0")/.." && pwd)/test/migration/testdata/pom.xml

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "install-apache-operator: flink-kubernetes-operator $version from Maven Central"
mvn --batch-mode --quiet -f "$pom" dependency:copy-dependencies \
  -Doperator.version="$version" -DincludeScope=runtime -DoutputDirectory="$tmp/lib"
ls "$tmp/lib/flink-kubernetes-operator-$version.jar" "$tmp/lib/flink-kubernetes-standalone-$version.jar" >/dev/null

rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp" "$dest"
trap - EXIT
chmod 755 "$dest"
echo "install-apache-operator: $version installed in $dest ($(ls "$dest/lib" | wc -l) jars, $(du -sh "$dest" | cut -f1))"
