package images

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// CatalogConfigs is where the file-based catalog lives in the catalog image; the label
// operators.operatorframework.io.index.configs.v1 tells OLM.
const CatalogConfigs = "/configs"

// OpmPath is where opm lives in the catalog image.
const OpmPath = "/bin/opm"

// CatalogOptions say what goes into the catalog image.
type CatalogOptions struct {
	// Opm is a static opm binary.
	Opm string
	// Dir is the file-based catalog (catalog/).
	Dir string
	// Bundle is the olm.bundle entry (package.vVERSION) this build's images are for: its image
	// becomes BundleDigestRef and its operator image OperatorDigestRef, in relatedImages and
	// in the embedded CSV.
	Bundle            string
	BundleDigestRef   string
	OperatorDigestRef string
	CACerts           string
	Meta              Meta
}

// Catalog builds the catalog image: opm serving catalog/ from /configs, with this version's
// bundle pointing at the bundle and operator images by digest.
func Catalog(o CatalogOptions) (v1.Image, error) {
	opm, err := readExecutable(o.Opm)
	if err != nil {
		return nil, fmt.Errorf("opm: %w", err)
	}
	base, err := baseLayer(o.CACerts)
	if err != nil {
		return nil, err
	}
	base.add(file{Path: OpmPath, Mode: 0o755, Data: opm})
	var configs layer
	if err := configs.addTree(o.Dir, CatalogConfigs); err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	pinned := 0
	for i, f := range configs {
		ext := path.Ext(f.Path)
		if f.Dir || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		data, n, err := pinBundle(f.Data, o)
		if err != nil {
			return nil, fmt.Errorf("catalog file %s: %w", f.Path, err)
		}
		if n > 0 {
			configs[i].Data = data
			pinned += n
		}
	}
	if pinned != 1 {
		return nil, fmt.Errorf("catalog %s: %d olm.bundle entries named %s, want 1 (run make catalog)", o.Dir, pinned, o.Bundle)
	}
	labels := o.Meta.labels("flink-operator-catalog")
	labels["operators.operatorframework.io.index.configs.v1"] = CatalogConfigs
	return assemble(v1.Config{
		User:       NonRoot,
		Entrypoint: []string{OpmPath},
		// No --cache-dir: opm refuses a cache directory it did not build with --cache-only, which
		// needs opm to run at build time; it builds its cache in a temporary directory at start.
		Cmd:        []string{"serve", CatalogConfigs},
		WorkingDir: "/",
		Env:        baseEnv(),
		Labels:     labels,
		ExposedPorts: map[string]struct{}{
			"50051/tcp": {},
		},
	}, base, configs)
}

// pinBundle rewrites the olm.bundle named o.Bundle in a catalog file (a YAML or JSON stream)
// and returns the file and how many bundles it pinned. Files without it are returned as-is.
func pinBundle(data []byte, o CatalogOptions) ([]byte, int, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var docs []map[string]any
	found := 0
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, 0, err
		}
		if doc == nil {
			continue
		}
		if doc["schema"] == "olm.bundle" && doc["name"] == o.Bundle {
			if err := pinBundleDoc(doc, o); err != nil {
				return nil, 0, fmt.Errorf("bundle %s: %w", o.Bundle, err)
			}
			found++
		}
		docs = append(docs, doc)
	}
	if found == 0 {
		return data, 0, nil
	}
	var out bytes.Buffer
	for _, doc := range docs {
		b, err := yaml.Marshal(doc)
		if err != nil {
			return nil, 0, err
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	return out.Bytes(), found, nil
}

func pinBundleDoc(doc map[string]any, o CatalogOptions) error {
	doc["image"] = o.BundleDigestRef
	props, _ := doc["properties"].([]any)
	operatorImage := ""
	for _, p := range props {
		m, ok := p.(map[string]any)
		if !ok || m["type"] != "olm.bundle.object" {
			continue
		}
		value, _ := m["value"].(map[string]any)
		encoded, _ := value["data"].(string)
		raw, err := base64.StdEncoding.DecodeString(encoded)
		if err != nil {
			return fmt.Errorf("olm.bundle.object: %w", err)
		}
		var kind struct{ Kind string }
		if err := json.Unmarshal(raw, &kind); err != nil {
			return fmt.Errorf("olm.bundle.object: %w", err)
		}
		if kind.Kind != "ClusterServiceVersion" {
			continue
		}
		if operatorImage != "" {
			return fmt.Errorf("more than one ClusterServiceVersion")
		}
		if operatorImage, err = csvImage(raw); err != nil {
			return err
		}
		pinned, err := pinCSV(raw, o.OperatorDigestRef)
		if err != nil {
			return err
		}
		value["data"] = base64.StdEncoding.EncodeToString(pinned)
	}
	if operatorImage == "" {
		return fmt.Errorf("no ClusterServiceVersion among its olm.bundle.object properties")
	}
	related, _ := doc["relatedImages"].([]any)
	for _, r := range related {
		if m, ok := r.(map[string]any); ok && m["image"] == operatorImage {
			m["image"] = o.OperatorDigestRef
		}
	}
	return nil
}
