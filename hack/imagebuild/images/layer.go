// Package images builds the operator, bundle and catalog images as OCI image layouts without a
// container runtime, with go-containerregistry. Every image is reproducible: file times, owners
// and the image's creation time are fixed, so the same inputs give the same digest.
package images

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Epoch is the time every file and image carries: builds depend on their inputs only.
var Epoch = time.Unix(0, 0).UTC()

// file is one entry of a layer: a directory (Data nil, Dir true), a symbolic link (Link set)
// or a regular file.
type file struct {
	Path string // absolute path in the image
	Mode int64
	Dir  bool
	Link string // target of a symbolic link
	Data []byte
	UID  int // owner; root (0) unless set
}

// layer is a set of files written as one tar layer, sorted by path.
type layer []file

// add records a file, and its parent directories (0755) when they are not there yet.
func (l *layer) add(f file) {
	f.Path = path.Clean("/" + f.Path)
	for dir := path.Dir(f.Path); dir != "/"; dir = path.Dir(dir) {
		if !l.has(dir) {
			*l = append(*l, file{Path: dir, Mode: 0o755, Dir: true})
		}
	}
	if !l.has(f.Path) {
		*l = append(*l, f)
	}
}

func (l layer) has(p string) bool {
	for _, f := range l {
		if f.Path == p {
			return true
		}
	}
	return false
}

// addTree copies the directory src into the image at dst (files 0644, directories 0755:
// what is readable stays readable by any user, nothing is writable but by root).
func (l *layer) addTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := path.Join(dst, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			l.add(file{Path: target, Mode: 0o755, Dir: true})
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			l.add(file{Path: target, Mode: 0o644, Data: data})
		default:
			return fmt.Errorf("%s: only regular files and directories go into an image, not %s", p, d.Type())
		}
		return nil
	})
}

// image turns the layer into a gzip-compressed OCI layer.
func (l layer) image() (v1.Layer, error) {
	sorted := append(layer{}, l...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range sorted {
		h := &tar.Header{Name: f.Path[1:], Mode: f.Mode, ModTime: Epoch, Format: tar.FormatPAX, Uid: f.UID, Gid: f.UID}
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.Path, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
