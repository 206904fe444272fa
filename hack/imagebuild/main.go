// Command imagebuild builds the operator, bundle and catalog images as OCI image layout
// directories without a container runtime, and pushes them (package images does the work). It
// also builds the busybox image the local cluster's node agent runs busybox containers from.
//
//	imagebuild operator -binary bin/manager -image IMG -out bin/images/flink-operator
//	imagebuild bundle -operator bin/images/flink-operator -image BUNDLE_IMG -out bin/images/flink-operator-bundle
//	imagebuild catalog -opm OPM -operator … -bundle … -bundle-name flink-operator.v0.2.0 -image CATALOG_IMG -out …
//	imagebuild busybox -binary DIR/bin/busybox -image busybox:1.35.0 -out bin/images/busybox
//	imagebuild push bin/images/flink-operator bin/images/flink-operator-bundle …
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/flink-operator/flink-operator/hack/imagebuild/images"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: imagebuild operator|bundle|catalog|busybox|push [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	var meta images.Meta
	fs.StringVar(&meta.Source, "source", "https://github.com/flink-operator/flink-operator", "org.opencontainers.image.source")
	fs.StringVar(&meta.Version, "version", "", "org.opencontainers.image.version")
	fs.StringVar(&meta.Revision, "revision", "", "org.opencontainers.image.revision (git commit)")
	fs.StringVar(&meta.Licenses, "licenses", "Apache-2.0", "org.opencontainers.image.licenses")
	image := fs.String("image", "", "name of the image (registry/repository:tag)")
	out := fs.String("out", "", "OCI layout directory to write")
	caCerts := fs.String("ca-certs", "", "CA certificate bundle to put into the image instead of the pinned one (images/cacerts, Debian's ca-certificates "+images.PinnedCACertsVersion+")")
	operator := fs.String("operator", "", "OCI layout of the operator image (bundle, catalog)")
	switch args[0] {
	case "operator":
		binary := fs.String("binary", "bin/manager", "static manager binary")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		img, err := images.Operator(images.OperatorOptions{Binary: *binary, CACerts: *caCerts, Meta: meta})
		if err != nil {
			return err
		}
		return write(*out, img, *image)
	case "bundle":
		dockerfile := fs.String("dockerfile", "bundle.Dockerfile", "bundle Dockerfile")
		context := fs.String("context", ".", "directory the Dockerfile's COPY sources are relative to")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		opRef, err := digestRef(*operator)
		if err != nil {
			return err
		}
		img, err := images.Bundle(images.BundleOptions{Dockerfile: *dockerfile, ContextDir: *context, OperatorDigestRef: opRef})
		if err != nil {
			return err
		}
		return write(*out, img, *image)
	case "catalog":
		opm := fs.String("opm", "", "static opm binary")
		dir := fs.String("dir", "catalog", "file-based catalog directory")
		bundle := fs.String("bundle", "", "OCI layout of the bundle image")
		bundleName := fs.String("bundle-name", "", "olm.bundle entry the images are for (package.vVERSION)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		opRef, err := digestRef(*operator)
		if err != nil {
			return err
		}
		bundleRef, err := digestRef(*bundle)
		if err != nil {
			return err
		}
		img, err := images.Catalog(images.CatalogOptions{Opm: *opm, Dir: *dir, Bundle: *bundleName, BundleDigestRef: bundleRef,
			OperatorDigestRef: opRef, CACerts: *caCerts, Meta: meta})
		if err != nil {
			return err
		}
		return write(*out, img, *image)
	case "busybox":
		binary := fs.String("binary", "", "static busybox binary (bin/busybox of Debian's busybox-static package)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		applets, err := images.BusyboxApplets(*binary)
		if err != nil {
			return err
		}
		img, err := images.Busybox(images.BusyboxOptions{Binary: *binary, Applets: applets, Meta: meta})
		if err != nil {
			return err
		}
		return write(*out, img, *image)
	case "push":
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		for _, dir := range fs.Args() {
			if err := push(dir); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("unknown command %q: operator, bundle, catalog, busybox or push", args[0])
	}
}

// write stores img as the OCI layout dir, named ref, and prints its digest reference.
func write(dir string, img v1.Image, ref string) error {
	if dir == "" || ref == "" {
		return fmt.Errorf("-out and -image are required")
	}
	if err := images.WriteLayout(dir, img, ref); err != nil {
		return err
	}
	d, err := images.DigestRef(ref, img)
	if err != nil {
		return err
	}
	fmt.Printf("%s\t%s\n", dir, d)
	return nil
}

// digestRef names the image of an OCI layout by digest in its repository.
func digestRef(dir string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("the OCI layout of the image this one names is required (-operator, -bundle)")
	}
	img, ref, err := images.ReadLayout(dir)
	if err != nil {
		return "", err
	}
	return images.DigestRef(ref, img)
}

// push uploads the image of an OCI layout to the registry under its name, with the
// credentials of the Docker config (~/.docker/config.json, as crane and docker login use).
func push(dir string) error {
	img, ref, err := images.ReadLayout(dir)
	if err != nil {
		return err
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("%s: image name %q: %w", dir, ref, err)
	}
	if err := remote.Write(r, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("push %s to %s: %w", dir, ref, err)
	}
	d, err := images.DigestRef(ref, img)
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s\n", d)
	return nil
}
