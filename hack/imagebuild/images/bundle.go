package images

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"
)

// Dockerfile is what a bundle Dockerfile says: labels and copies onto an empty base.
type Dockerfile struct {
	Labels map[string]string
	Copies []Copy
}

// Copy is one COPY instruction: a path of the build context to a path in the image.
type Copy struct{ Src, Dst string }

// ParseDockerfile reads the subset of Dockerfile syntax `make bundle` writes: FROM scratch,
// LABEL key=value … and COPY src dst. Anything else is refused, so a change to
// bundle.Dockerfile that this builder would not honour fails the build instead of being lost.
func ParseDockerfile(text string) (Dockerfile, error) {
	df := Dockerfile{Labels: map[string]string{}}
	from := false
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := fmt.Sprintf("line %d %q", i+1, line)
		if strings.HasSuffix(line, `\`) {
			return df, fmt.Errorf("%s: line continuations are not supported", where)
		}
		instr, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			if rest != "scratch" {
				return df, fmt.Errorf("%s: a bundle image is built FROM scratch only", where)
			}
			from = true
		case "LABEL":
			if err := df.addLabels(where, rest); err != nil {
				return df, err
			}
		case "COPY":
			if err := df.addCopy(where, rest); err != nil {
				return df, err
			}
		default:
			return df, fmt.Errorf("%s: instruction %s is not supported (FROM scratch, LABEL and COPY are)", where, instr)
		}
		if !from {
			return df, fmt.Errorf("%s: the first instruction must be FROM scratch", where)
		}
	}
	if !from {
		return df, fmt.Errorf("no FROM instruction")
	}
	return df, nil
}

// addLabels reads a LABEL instruction's key=value words (where names its line in errors).
func (df *Dockerfile) addLabels(where, rest string) error {
	words, err := splitWords(rest)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if len(words) == 0 {
		return fmt.Errorf("%s: LABEL needs key=value", where)
	}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			return fmt.Errorf("%s: label %q is not key=value", where, w)
		}
		df.Labels[k] = v
	}
	return nil
}

// addCopy reads a COPY instruction's source and destination (where names its line in errors).
func (df *Dockerfile) addCopy(where, rest string) error {
	words, err := splitWords(rest)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if len(words) != 2 || strings.HasPrefix(words[0], "--") {
		return fmt.Errorf("%s: COPY takes exactly a source and a destination, without flags", where)
	}
	df.Copies = append(df.Copies, Copy{Src: words[0], Dst: words[1]})
	return nil
}

// splitWords splits on blanks, honouring double quotes ("a b" is one word, quotes removed).
func splitWords(s string) ([]string, error) {
	var words []string
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		end := strings.IndexAny(s, " \t")
		if q := strings.IndexByte(s, '"'); q >= 0 && (end < 0 || q < end) {
			// key="quoted value": find the closing quote.
			closing := q + 1
			for ; closing < len(s) && s[closing] != '"'; closing++ {
				if s[closing] == '\\' {
					closing++
				}
			}
			if closing >= len(s) {
				return nil, fmt.Errorf("unterminated quote in %q", s)
			}
			unq, err := strconv.Unquote(s[q : closing+1])
			if err != nil {
				return nil, fmt.Errorf("quoted value %s: %w", s[q:closing+1], err)
			}
			words = append(words, s[:q]+unq)
			s = s[closing+1:]
			continue
		}
		if end < 0 {
			end = len(s)
		}
		words = append(words, s[:end])
		s = s[end:]
	}
	return words, nil
}

// BundleOptions say what goes into the bundle image.
type BundleOptions struct {
	// Dockerfile is bundle.Dockerfile; its COPY sources are relative to ContextDir.
	Dockerfile string
	ContextDir string
	// OperatorDigestRef is the operator image just built, by digest. It replaces every
	// occurrence of the image the CSV names in its containerImage annotation (by tag): the
	// annotation, the Deployment and relatedImages.
	OperatorDigestRef string
}

// Bundle builds the bundle image from bundle.Dockerfile: its labels, its files, and the CSV
// naming the operator image by digest. The committed bundle/ keeps the tag: a digest there
// would change with every commit and make `make verify` fail.
func Bundle(o BundleOptions) (v1.Image, error) {
	text, err := os.ReadFile(o.Dockerfile)
	if err != nil {
		return nil, err
	}
	df, err := ParseDockerfile(string(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Dockerfile, err)
	}
	if o.OperatorDigestRef == "" {
		return nil, fmt.Errorf("no operator image digest to pin the CSV's image to")
	}
	var l layer
	for _, c := range df.Copies {
		src := filepath.Join(o.ContextDir, filepath.FromSlash(path.Clean("/"+c.Src)))
		if err := l.addTree(src, c.Dst); err != nil {
			return nil, fmt.Errorf("COPY %s %s: %w", c.Src, c.Dst, err)
		}
	}
	pinned := 0
	for i, f := range l {
		if f.Dir || !strings.HasSuffix(f.Path, ".clusterserviceversion.yaml") {
			continue
		}
		data, err := pinCSV(f.Data, o.OperatorDigestRef)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		l[i].Data = data
		pinned++
	}
	if pinned != 1 {
		return nil, fmt.Errorf("the bundle has %d ClusterServiceVersions (*.clusterserviceversion.yaml), want 1", pinned)
	}
	return assemble(v1.Config{Labels: df.Labels}, l)
}

// csvImage returns the operator image a CSV names in metadata.annotations.containerImage.
func csvImage(csv []byte) (string, error) {
	var obj struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(csv, &obj); err != nil {
		return "", fmt.Errorf("ClusterServiceVersion: %w", err)
	}
	if obj.Kind != "ClusterServiceVersion" {
		return "", fmt.Errorf("kind %q, want ClusterServiceVersion", obj.Kind)
	}
	img := obj.Metadata.Annotations["containerImage"]
	if img == "" {
		return "", fmt.Errorf("metadata.annotations.containerImage is empty: it must name the operator image")
	}
	if strings.Contains(img, "@") {
		return "", fmt.Errorf("metadata.annotations.containerImage %q is already a digest; the committed CSV names the image by tag", img)
	}
	return img, nil
}

// pinCSV replaces every occurrence of the CSV's operator image (containerImage) by digestRef.
func pinCSV(csv []byte, digestRef string) ([]byte, error) {
	img, err := csvImage(csv)
	if err != nil {
		return nil, err
	}
	return []byte(strings.ReplaceAll(string(csv), img, digestRef)), nil
}
