#!/usr/bin/env bash
# Installs a Flink distribution and the example jobs the tests run, from package registries only:
#   the distribution's lib/, bin/ (bash-java-utils.jar) and plugins/ come from the
#   apache-flink-libraries sdist on PyPI (pip download --no-deps; pip's cache makes reruns cheap),
#   the example jobs from Maven Central (org.apache.flink:flink-examples-streaming, classifiers
#   TopSpeedWindowing and WordCount; Maven's local repository caches them). They land in
#   examples/<Job>.jar and, as in the Flink image, in examples/streaming/<Job>.jar. Central has no
#   StateMachineExample classifier (the image builds it), so our examples run TopSpeedWindowing.
# Usage: hack/install-flink.sh FLINK_VERSION EXAMPLES_VERSION DEST
set -euo pipefail
version=$1 examples_version=$2 dest=$3

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "install-flink: apache-flink-libraries==$version from PyPI"
python3 -m pip download --quiet --no-deps --no-binary :all: "apache-flink-libraries==$version" -d "$tmp"
# The sdist is apache-flink-libraries-V.tar.gz up to 1.20 and apache_flink_libraries-V.tar.gz (PEP 625) in 2.x.
sdist=$(ls "$tmp"/apache*flink*libraries-"$version".tar.gz)
top=$(basename "$sdist" .tar.gz)   # the sdist's top directory has the same name
mkdir -p "$tmp/x"
tar -xzf "$sdist" -C "$tmp/x" --strip-components=2 "$top/deps/lib" "$top/deps/bin" "$top/deps/plugins"
ls "$tmp/x/lib"/flink-dist-*.jar >/dev/null

echo "install-flink: flink-examples-streaming $examples_version from Maven Central"
mkdir -p "$tmp/x/examples"
for job in TopSpeedWindowing WordCount; do
  mvn --batch-mode --quiet dependency:copy \
    -Dartifact="org.apache.flink:flink-examples-streaming:$examples_version:jar:$job" \
    -DoutputDirectory="$tmp/x/examples" -Dmdep.stripVersion=true -Dmdep.stripClassifier=false
  mv "$tmp/x/examples/flink-examples-streaming-$job.jar" "$tmp/x/examples/$job.jar" 2>/dev/null ||
    mv "$tmp/x/examples/"*"$job"*.jar "$tmp/x/examples/$job.jar"
done
mkdir -p "$tmp/x/examples/streaming"
for jar in "$tmp/x/examples/"*.jar; do ln -s "../$(basename "$jar")" "$tmp/x/examples/streaming/$(basename "$jar")"; done

rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp/x" "$dest"
echo "install-flink: $version installed in $dest ($(du -sh "$dest" | cut -f1))"
