package upstreame2e

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// StateMachineClass is the entry class of the Flink image's
// examples/streaming/StateMachineExample.jar, which some manifests run (local:// jarURI, some
// without an entryClass).
const StateMachineClass = "org.apache.flink.streaming.examples.statemachine.StateMachineExample"

// ImageExamples writes into dir what the Flink image has in /opt/flink/examples/streaming: the
// local distribution's jobs there (distExamples, make flink-dist, which has no
// StateMachineExample: Maven Central publishes no such classifier) and StateMachineExample.jar,
// made as the image's is, the examples module jar (moduleJar, the one the scripts' other
// manifests download) with StateMachineClass as its Main-Class.
func ImageExamples(distExamples, moduleJar, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(distExamples)
	if err != nil {
		return fmt.Errorf("the distribution's examples: %w", err)
	}
	for _, e := range entries {
		target, err := filepath.EvalSymlinks(filepath.Join(distExamples, e.Name()))
		if err != nil {
			return err
		}
		if err := os.Symlink(target, filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return WithMainClass(moduleJar, filepath.Join(dir, "StateMachineExample.jar"), StateMachineClass)
}

// WithMainClass writes to out the jar in, its manifest naming mainClass as Main-Class.
func WithMainClass(in, out, mainClass string) error {
	r, err := zip.OpenReader(in)
	if err != nil {
		return err
	}
	defer r.Close()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	manifest := false
	for _, f := range r.File {
		if f.Name == "META-INF/MANIFEST.MF" {
			manifest = true
			data, err := readEntry(f)
			if err != nil {
				return err
			}
			if err := writeEntry(w, f.Name, withMainClass(string(data), mainClass)); err != nil {
				return err
			}
			continue
		}
		if strings.HasSuffix(f.Name, "/") {
			// A directory entry: zip.Writer refuses to copy the empty compressed stream some
			// archivers write for one.
			if _, err := w.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store, Modified: f.Modified}); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
			continue
		}
		if err := w.Copy(f); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	if !manifest {
		if err := writeEntry(w, "META-INF/MANIFEST.MF", withMainClass("Manifest-Version: 1.0\r\n", mainClass)); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

func readEntry(f *zip.File) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func writeEntry(w *zip.Writer, name, content string) error {
	fw, err := w.Create(name)
	if err != nil {
		return err
	}
	_, err = io.WriteString(fw, content)
	return err
}

// withMainClass is the manifest with Main-Class set to mainClass (replacing one it has).
func withMainClass(manifest, mainClass string) string {
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(manifest, "\r\n", "\n"), "\n") {
		if l != "" && !strings.HasPrefix(l, "Main-Class:") {
			lines = append(lines, l)
		}
	}
	lines = append(lines, "Main-Class: "+mainClass)
	// A manifest ends with an empty line; its lines end with CRLF as the jar tool writes them.
	return strings.Join(lines, "\r\n") + "\r\n\r\n"
}
