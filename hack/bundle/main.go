// Command bundle writes the OLM bundle and the file-based catalog's channel index. It is the
// registry-only stand-in for `operator-sdk generate bundle`, which cannot be installed here: it
// reads the stream `kustomize build config/manifests` prints (CSV base, CRDs, RBAC, Deployment,
// webhooks, samples, scorecard configuration) and writes bundle/ in operator-sdk's layout.
//
//	kustomize build config/manifests | bundle generate -version 0.2.0 -replaces 0.1.0 ...
//	bundle index -package flink-operator -dir catalog/flink-operator ...
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bundle:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: bundle generate|index [flags]")
	}
	switch args[0] {
	case "generate":
		fs := flag.NewFlagSet("generate", flag.ContinueOnError)
		var o bundleOptions
		var channels string
		fs.StringVar(&o.Package, "package", "flink-operator", "OLM package name")
		fs.StringVar(&o.Version, "version", "", "bundle version (semver, without v)")
		fs.StringVar(&o.Replaces, "replaces", "", "version this bundle replaces (empty for the first)")
		fs.StringVar(&o.SkipRange, "skip-range", "", "olm.skipRange annotation, e.g. '>=0.0.0 <0.2.0'")
		fs.StringVar(&o.Image, "image", "", "operator image the CSV's Deployment runs")
		fs.StringVar(&channels, "channels", "stable", "comma-separated channels")
		fs.StringVar(&o.DefaultChannel, "default-channel", "stable", "default channel")
		fs.StringVar(&o.OutputDir, "output-dir", "bundle", "bundle directory")
		fs.StringVar(&o.Dockerfile, "dockerfile", "bundle.Dockerfile", "bundle image Dockerfile to write")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		o.Channels = strings.Split(channels, ",")
		return generateBundle(os.Stdin, o)
	case "index":
		fs := flag.NewFlagSet("index", flag.ContinueOnError)
		var o indexOptions
		var channels string
		fs.StringVar(&o.Package, "package", "flink-operator", "OLM package name")
		fs.StringVar(&o.Dir, "dir", "catalog/flink-operator", "package directory of the catalog")
		fs.StringVar(&channels, "channels", "stable", "comma-separated channels every bundle is in")
		fs.StringVar(&o.DefaultChannel, "default-channel", "stable", "default channel")
		fs.StringVar(&o.Description, "description", "", "package description")
		fs.StringVar(&o.IconFile, "icon", "", "SVG icon of the package")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		o.Channels = strings.Split(channels, ",")
		return writeIndex(o)
	default:
		return fmt.Errorf("unknown command %q: want generate or index", args[0])
	}
}
