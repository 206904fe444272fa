package images

import (
	"archive/tar"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const (
	operatorRef = "ghcr.io/flink-operator/flink-operator:test"
	bundleRef   = "ghcr.io/flink-operator/flink-operator-bundle:vtest"
	catalogRef  = "ghcr.io/flink-operator/flink-operator-catalog:vtest"
)

// entry is a file of an image's flattened file system.
type entry struct {
	hdr  *tar.Header
	data []byte
}

func files(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]entry{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out["/"+strings.TrimSuffix(h.Name, "/")] = entry{h, data}
	}
}

// repoRoot is three levels above the package directory, where go test runs the test (not the
// source file's path: builds trim it).
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Join(wd, "..", "..", "..")
}

// buildManager builds the operator as `make image` does: static, trimmed paths.
func buildManager(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "manager")
	cmd := exec.CommandContext(context.Background(), "go", "build", "-trimpath", "-o", out, "./cmd")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "build the manager: %s", b)
	return out
}

// caCerts is a stand-in CA bundle (the build machine's may be absent where tests run).
func caCerts(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(p, []byte("-----BEGIN CERTIFICATE-----\nstand-in\n-----END CERTIFICATE-----\n"), 0o644))
	return p
}

// csvDeployment is the manager container of the committed CSV.
func csvManager(t *testing.T, csv []byte) (image string, command []string) {
	t.Helper()
	var obj struct {
		Spec struct {
			Install struct {
				Spec struct {
					Deployments []struct {
						Spec struct {
							Template struct {
								Spec struct {
									Containers []struct {
										Name, Image string
										Command     []string
									}
								}
							}
						}
					}
				}
			}
		}
	}
	require.NoError(t, yaml.Unmarshal(csv, &obj))
	for _, c := range obj.Spec.Install.Spec.Deployments[0].Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c.Image, c.Command
		}
	}
	t.Fatal("no manager container in the CSV")
	return "", nil
}

// TestImages builds the three images from this tree and checks what a cluster runs them by.
func TestImages(t *testing.T) {
	root := repoRoot(t)
	manager := buildManager(t)
	certs := caCerts(t)
	meta := Meta{Source: "https://github.com/flink-operator/flink-operator", Version: "0.2.0", Revision: "abc123", Licenses: "Apache-2.0"}

	operator, err := Operator(OperatorOptions{Binary: manager, CACerts: certs, Meta: meta})
	require.NoError(t, err)
	again, err := Operator(OperatorOptions{Binary: manager, CACerts: certs, Meta: meta})
	require.NoError(t, err)
	d1, err := operator.Digest()
	require.NoError(t, err)
	d2, err := again.Digest()
	require.NoError(t, err)
	assert.Equal(t, d1, d2, "two builds of the same binary give the same image")

	// Written and read back as an OCI layout, the image keeps its digest and name.
	dir := filepath.Join(t.TempDir(), "operator")
	require.NoError(t, WriteLayout(dir, operator, operatorRef))
	read, ref, err := ReadLayout(dir)
	require.NoError(t, err)
	rd, err := read.Digest()
	require.NoError(t, err)
	assert.Equal(t, d1, rd)
	assert.Equal(t, operatorRef, ref)
	operatorDigestRef, err := DigestRef(operatorRef, operator)
	require.NoError(t, err)
	assert.Equal(t, "ghcr.io/flink-operator/flink-operator@"+d1.String(), operatorDigestRef)

	committedCSV, err := os.ReadFile(filepath.Join(root, "bundle", "manifests", "flink-operator.clusterserviceversion.yaml"))
	require.NoError(t, err)
	committedImage, command := csvManager(t, committedCSV)

	t.Run("operator", func(t *testing.T) {
		cf, err := operator.ConfigFile()
		require.NoError(t, err)
		assert.Equal(t, "65532:65532", cf.Config.User)
		assert.Equal(t, command, cf.Config.Entrypoint, "the image's entrypoint is the CSV's command")
		assert.Contains(t, cf.Config.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt")
		assert.Equal(t, map[string]string{
			"org.opencontainers.image.title":    "flink-operator",
			"org.opencontainers.image.source":   meta.Source,
			"org.opencontainers.image.version":  meta.Version,
			"org.opencontainers.image.revision": meta.Revision,
			"org.opencontainers.image.licenses": meta.Licenses,
		}, cf.Config.Labels)
		assert.Equal(t, Epoch, cf.Created.UTC())
		fs := files(t, operator)
		require.Contains(t, fs, "/manager")
		assert.Equal(t, int64(0o755), fs["/manager"].hdr.Mode, "executable by the non-root user")
		want, err := os.ReadFile(manager)
		require.NoError(t, err)
		assert.Equal(t, len(want), len(fs["/manager"].data))
		require.Contains(t, fs, "/etc/ssl/certs/ca-certificates.crt")
		assert.Contains(t, string(fs["/etc/ssl/certs/ca-certificates.crt"].data), "BEGIN CERTIFICATE")
		assert.Equal(t, int64(0o1777), fs["/tmp"].hdr.Mode&0o7777)
		assert.Contains(t, string(fs["/etc/passwd"].data), ":65532:65532:")
		for p, e := range fs {
			assert.Equal(t, Epoch, e.hdr.ModTime.UTC(), p)
		}
	})

	bundle, err := Bundle(BundleOptions{Dockerfile: filepath.Join(root, "bundle.Dockerfile"), ContextDir: root, OperatorDigestRef: operatorDigestRef})
	require.NoError(t, err)
	bundleDigestRef, err := DigestRef(bundleRef, bundle)
	require.NoError(t, err)
	t.Run("bundle", func(t *testing.T) {
		cf, err := bundle.ConfigFile()
		require.NoError(t, err)
		dockerfile, err := os.ReadFile(filepath.Join(root, "bundle.Dockerfile"))
		require.NoError(t, err)
		df, err := ParseDockerfile(string(dockerfile))
		require.NoError(t, err)
		assert.Equal(t, df.Labels, cf.Config.Labels)
		assert.Equal(t, "flink-operator", cf.Config.Labels["operators.operatorframework.io.bundle.package.v1"])
		assert.Equal(t, "registry+v1", cf.Config.Labels["operators.operatorframework.io.bundle.mediatype.v1"])
		fs := files(t, bundle)
		for _, p := range []string{"/metadata/annotations.yaml", "/tests/scorecard/config.yaml", "/manifests/flink.apache.org_flinkdeployments.yaml"} {
			assert.Contains(t, fs, p)
		}
		csv := fs["/manifests/flink-operator.clusterserviceversion.yaml"].data
		require.NotEmpty(t, csv)
		img, _ := csvManager(t, csv)
		assert.Equal(t, operatorDigestRef, img, "the Deployment runs the operator image by digest")
		assert.NotContains(t, string(csv), committedImage, "no reference by tag is left")
		assert.Equal(t, strings.Count(string(committedCSV), committedImage), strings.Count(string(csv), operatorDigestRef),
			"containerImage, the Deployment and relatedImages all name the digest")
		again, err := Bundle(BundleOptions{Dockerfile: filepath.Join(root, "bundle.Dockerfile"), ContextDir: root, OperatorDigestRef: operatorDigestRef})
		require.NoError(t, err)
		assertSameDigest(t, bundle, again)
	})

	opm := manager // any static program stands in for opm here: the test checks the image, not opm
	catalog, err := Catalog(CatalogOptions{Opm: opm, Dir: filepath.Join(root, "catalog"), Bundle: "flink-operator.v0.2.0",
		BundleDigestRef: bundleDigestRef, OperatorDigestRef: operatorDigestRef, CACerts: certs, Meta: meta})
	require.NoError(t, err)
	t.Run("catalog", func(t *testing.T) {
		cf, err := catalog.ConfigFile()
		require.NoError(t, err)
		assert.Equal(t, []string{"/bin/opm"}, cf.Config.Entrypoint)
		assert.Equal(t, []string{"serve", "/configs"}, cf.Config.Cmd)
		assert.Equal(t, "65532:65532", cf.Config.User)
		assert.Equal(t, "/configs", cf.Config.Labels["operators.operatorframework.io.index.configs.v1"])
		fs := files(t, catalog)
		assert.Equal(t, int64(0o755), fs["/bin/opm"].hdr.Mode)
		assert.Contains(t, fs, "/configs/flink-operator/index.yaml")
		var bundleDoc struct {
			Image         string
			RelatedImages []struct{ Image string } `json:"relatedImages"`
			Properties    []struct {
				Type  string
				Value json.RawMessage
			}
		}
		require.NoError(t, yaml.Unmarshal(fs["/configs/flink-operator/bundles/flink-operator.v0.2.0.yaml"].data, &bundleDoc))
		assert.Equal(t, bundleDigestRef, bundleDoc.Image, "the catalog installs the bundle image by digest")
		assert.Contains(t, bundleDoc.RelatedImages, struct{ Image string }{operatorDigestRef})
		var csvImage string
		for _, p := range bundleDoc.Properties {
			var v struct{ Data string }
			if p.Type != "olm.bundle.object" || json.Unmarshal(p.Value, &v) != nil {
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(v.Data)
			require.NoError(t, err)
			if strings.Contains(string(raw), `"kind":"ClusterServiceVersion"`) {
				csvImage, _ = csvManager(t, raw)
			}
		}
		assert.Equal(t, operatorDigestRef, csvImage, "the CSV OLM installs from the catalog runs the operator by digest")
		// The previous version's bundle is left as released.
		assert.Equal(t, fileOf(t, root, "catalog/flink-operator/bundles/flink-operator.v0.1.0.yaml"), string(fs["/configs/flink-operator/bundles/flink-operator.v0.1.0.yaml"].data))
	})
}

func fileOf(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	require.NoError(t, err)
	return string(b)
}

func assertSameDigest(t *testing.T, a, b v1.Image) {
	t.Helper()
	da, err := a.Digest()
	require.NoError(t, err)
	db, err := b.Digest()
	require.NoError(t, err)
	assert.Equal(t, da, db, "two builds give the same digest")
}

func TestDynamicBinaryRefused(t *testing.T) {
	// /bin/sh is a dynamically linked program: on an empty base it has no loader to run with.
	_, err := Operator(OperatorOptions{Binary: "/bin/sh", CACerts: caCerts(t)})
	require.ErrorContains(t, err, "dynamically linked")
	_, err = Catalog(CatalogOptions{Opm: "/bin/sh", Dir: t.TempDir(), CACerts: caCerts(t)})
	require.ErrorContains(t, err, "dynamically linked")
	notELF := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755))
	_, err = Operator(OperatorOptions{Binary: notELF, CACerts: caCerts(t)})
	require.ErrorContains(t, err, "not a Linux executable")
}

func TestParseDockerfile(t *testing.T) {
	df, err := ParseDockerfile("# comment\nFROM scratch\n\nLABEL a=b c=\"d e\"\nLABEL f=g\nCOPY bundle/manifests /manifests/\n")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "b", "c": "d e", "f": "g"}, df.Labels)
	assert.Equal(t, []Copy{{Src: "bundle/manifests", Dst: "/manifests/"}}, df.Copies)

	for text, want := range map[string]string{
		"FROM scratch\nRUN rm -rf /\n":                 "instruction RUN is not supported",
		"FROM alpine\n":                                "FROM scratch only",
		"LABEL a=b\nFROM scratch\n":                    "first instruction must be FROM scratch",
		"FROM scratch\nLABEL novalue\n":                `label "novalue" is not key=value`,
		"FROM scratch\nCOPY --chown=1 a b\n":           "without flags",
		"FROM scratch\nCOPY a b c\n":                   "exactly a source and a destination",
		"FROM scratch\nLABEL a=\"open\n":               "unterminated quote",
		"FROM scratch\nLABEL a=b \\\n  c=d\n":          "line continuations",
		"# only a comment\n":                           "no FROM",
		"FROM scratch\nADD https://example.com/x /x\n": "instruction ADD is not supported",
	} {
		_, err := ParseDockerfile(text)
		assert.ErrorContains(t, err, want, text)
	}
}

func TestBundleNeedsTaggedContainerImage(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bundle", "manifests"), 0o755))
	df := filepath.Join(dir, "bundle.Dockerfile")
	require.NoError(t, os.WriteFile(df, []byte("FROM scratch\nCOPY bundle/manifests /manifests/\n"), 0o644))
	for csv, want := range map[string]string{
		"kind: ClusterServiceVersion\nmetadata:\n  name: x\n":                                           "containerImage is empty",
		"kind: ClusterServiceVersion\nmetadata:\n  annotations:\n    containerImage: r/x@sha256:0123\n": "already a digest",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "bundle", "manifests", "x.clusterserviceversion.yaml"), []byte(csv), 0o644))
		_, err := Bundle(BundleOptions{Dockerfile: df, ContextDir: dir, OperatorDigestRef: "r/x@sha256:abcd"})
		assert.ErrorContains(t, err, want)
	}
}
