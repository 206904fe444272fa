package images

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// NonRoot is the user and group the operator and catalog images run as (distroless' nonroot).
const NonRoot = "65532:65532"

// RefAnnotation names the image in an OCI layout's index (what `crane push` and the node agent
// read back).
const RefAnnotation = "org.opencontainers.image.ref.name"

// Meta is what the OCI labels say about where an image comes from.
type Meta struct {
	Source   string // org.opencontainers.image.source, the repository URL
	Version  string // org.opencontainers.image.version
	Revision string // org.opencontainers.image.revision, the git commit
	Licenses string // org.opencontainers.image.licenses, an SPDX expression
}

func (m Meta) labels(title string) map[string]string {
	l := map[string]string{"org.opencontainers.image.title": title}
	for k, v := range map[string]string{
		"org.opencontainers.image.source":   m.Source,
		"org.opencontainers.image.version":  m.Version,
		"org.opencontainers.image.revision": m.Revision,
		"org.opencontainers.image.licenses": m.Licenses,
	} {
		if v != "" {
			l[k] = v
		}
	}
	return l
}

// assemble stacks the layers on an empty base with the given configuration, as an OCI image.
func assemble(cfg v1.Config, layers ...layer) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for i, l := range layers {
		ly, err := l.image()
		if err != nil {
			return nil, err
		}
		if img, err = mutate.Append(img, mutate.Addendum{Layer: ly, MediaType: types.OCILayer,
			History: v1.History{Created: v1.Time{Time: Epoch}, CreatedBy: fmt.Sprintf("hack/imagebuild layer %d", i+1)}}); err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Config = cfg
	cf.Created = v1.Time{Time: Epoch}
	return mutate.ConfigFile(img, cf)
}

// WriteLayout writes img as the only image of a fresh OCI image layout directory, named ref.
func WriteLayout(dir string, img v1.Image, ref string) error {
	if _, err := name.ParseReference(ref); err != nil {
		return fmt.Errorf("image name %q: %w", ref, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{RefAnnotation: ref})); err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return nil
}

// ReadLayout returns the only image of an OCI image layout directory and its name.
func ReadLayout(dir string) (v1.Image, string, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, "", fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	if len(m.Manifests) != 1 {
		return nil, "", fmt.Errorf("OCI layout %s: holds %d images, want exactly 1", dir, len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return nil, "", fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return img, m.Manifests[0].Annotations[RefAnnotation], nil
}

// DigestRef names img by digest in the repository of ref ("repo:tag" → "repo@sha256:…").
func DigestRef(ref string, img v1.Image) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("image name %q: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return r.Context().Digest(d.String()).String(), nil
}

// requireStatic refuses a dynamically linked program: an image with an empty base has no
// loader or C library to run it with.
func requireStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: not a Linux executable: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (it asks for a program interpreter); an image with an empty base needs a static binary (CGO_ENABLED=0)", path)
		}
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("%s: ELF type %s is not an executable", path, f.Type)
	}
	return nil
}

// readExecutable reads a static program for an image.
func readExecutable(path string) ([]byte, error) {
	if err := requireStatic(path); err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Clean(path))
}
