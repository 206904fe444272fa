#!/usr/bin/env bash
# Installs PyFlink (PyPI's apache-flink, with its apache-flink-libraries and Apache Beam) into a
# Python virtual environment: the Python a Flink image for PyFlink jobs carries (upstream's
# python example image pip-installs the same package). The local node agent puts DEST/bin first
# on the PATH of Flink containers, so the JobManager's PythonDriver and the TaskManagers' Python
# UDF workers find `python` with pyflink, as they would in such an image. Test tooling only: the
# operator never runs Python.
# Usage: hack/install-pyflink.sh FLINK_VERSION DEST
set -euo pipefail
version=$1 dest=$2

rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
trap 'rm -rf "$dest"' ERR
echo "install-pyflink: apache-flink==$version from PyPI into $dest"
python3 -m venv "$dest"
"$dest/bin/python" -m pip install --quiet --disable-pip-version-check "apache-flink==$version"
"$dest/bin/python" -c 'import pyflink.table, pyflink.version; print("install-pyflink: pyflink", pyflink.version.__version__)'
echo "install-pyflink: installed in $dest ($(du -sh "$dest" | cut -f1))"
