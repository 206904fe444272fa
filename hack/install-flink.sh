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
# Releases before 1.19 publish no per-job classifier jars on Central, only the plain module jar
# (all examples, no Main-Class). For those the job jar is built as the per-job jar is: the plain
# jar plus the classes of flink-connector-datagen (the examples' source, not in flink-dist),
# with the job's Main-Class.
declare -A main_class=(
  [TopSpeedWindowing]=org.apache.flink.streaming.examples.windowing.TopSpeedWindowing
  [WordCount]=org.apache.flink.streaming.examples.wordcount.WordCount
)
for job in TopSpeedWindowing WordCount; do
  if mvn --batch-mode --quiet dependency:copy \
    -Dartifact="org.apache.flink:flink-examples-streaming:$examples_version:jar:$job" \
    -DoutputDirectory="$tmp/x/examples" -Dmdep.stripVersion=true -Dmdep.stripClassifier=false >"$tmp/mvn.log" 2>&1; then
    mv "$tmp/x/examples/flink-examples-streaming-$job.jar" "$tmp/x/examples/$job.jar" 2>/dev/null ||
      mv "$tmp/x/examples/"*"$job"*.jar "$tmp/x/examples/$job.jar"
    continue
  fi
  grep -qE "Could not find artifact|was not found in" "$tmp/mvn.log" || { cat "$tmp/mvn.log" >&2; exit 1; }
  echo "install-flink: no $job classifier for $examples_version; using the module jar with Main-Class ${main_class[$job]}"
  if [ ! -d "$tmp/datagen" ]; then
    for artifact in flink-examples-streaming flink-connector-datagen; do
      mvn --batch-mode --quiet dependency:copy \
        -Dartifact="org.apache.flink:$artifact:$examples_version:jar" \
        -DoutputDirectory="$tmp/plain" -Dmdep.stripVersion=true
    done
    mkdir -p "$tmp/datagen"
    (cd "$tmp/datagen" && jar --extract --file "$tmp/plain/flink-connector-datagen.jar" org/apache/flink/connector/datagen)
  fi
  cp "$tmp/plain/flink-examples-streaming.jar" "$tmp/x/examples/$job.jar"
  jar --update --file "$tmp/x/examples/$job.jar" --main-class "${main_class[$job]}" -C "$tmp/datagen" org
done
mkdir -p "$tmp/x/examples/streaming"
for jar in "$tmp/x/examples/"*.jar; do ln -s "../$(basename "$jar")" "$tmp/x/examples/streaming/$(basename "$jar")"; done

rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp/x" "$dest"
echo "install-flink: $version installed in $dest ($(du -sh "$dest" | cut -f1))"
