#!/bin/sh
# Regenerates ca-certificates.crt, the CA bundle every image of hack/imagebuild carries, from
# Debian's ca-certificates package (Mozilla's roots) at the version and checksum pinned below,
# the way update-ca-certificates builds /etc/ssl/certs/ca-certificates.crt on a fresh Debian
# system: the certificates of usr/share/ca-certificates/mozilla, in byte order of their names,
# each ending in a newline. Nothing of the machine running it goes into the bundle.
#
# To move to a newer package: set VERSION and DEB_SHA256 (sha256sum of the .deb), run this
# script, and put the printed bundle checksum into images/cacerts.go (PinnedCACertsSHA256).
set -eu
VERSION='20250419~deb12u2'
DEB_SHA256='b9f76b5271a7ac373fd5e7e1b5b826a71ddd702b42a0d104955ecb1acfffc94b'

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download "ca-certificates=$VERSION"
echo "$DEB_SHA256  ca-certificates_${VERSION}_all.deb" | sha256sum -c -
dpkg-deb -x "ca-certificates_${VERSION}_all.deb" pkg
: >bundle
for f in $(cd pkg/usr/share/ca-certificates/mozilla && LC_ALL=C ls -1 -- *.crt); do
	sed -e '$a\' "pkg/usr/share/ca-certificates/mozilla/$f" >>bundle
done
mv bundle "$here/ca-certificates.crt"
sha256sum "$here/ca-certificates.crt"
