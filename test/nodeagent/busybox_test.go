package nodeagent

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestIsBusybox(t *testing.T) {
	for image, want := range map[string]bool{
		"busybox":                        true,
		"busybox:1.35.0":                 true,
		"busybox:latest":                 true,
		"library/busybox:1.36":           true,
		"docker.io/busybox:1.36":         true,
		"docker.io/library/busybox:1.36": true,
		"index.docker.io/library/busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000": true,
		"busyboxplus:curl":                false,
		"registry.invalid/busybox:1":      false,
		"quay.io/library/busybox:1":       false,
		"registry.invalid/not-runnable:1": false,
		"flink:1.20":                      false,
		"":                                false,
	} {
		assert.Equal(t, want, isBusybox(image), image)
	}
}

// With a busybox layout, every busybox image runs from it; a process image of the same name
// wins, and other images are not affected.
func TestBusyboxRunsFromItsLayout(t *testing.T) {
	a := &Agent{opts: Options{Busybox: "/images/busybox"}}
	for _, image := range []string{"busybox:1.35.0", "busybox", "docker.io/library/busybox:1.36"} {
		img, ok := a.processImage(image)
		assert.True(t, ok, image)
		assert.Equal(t, ProcessImage{Archive: "/images/busybox"}, img, image)
	}
	_, ok := a.processImage("registry.invalid/not-runnable:1")
	assert.False(t, ok)

	a.opts.ProcessImages = map[string]ProcessImage{"busybox:1.35": {Binary: "/bin/sh"}}
	img, ok := a.processImage("busybox:1.35.0")
	assert.True(t, ok)
	assert.Equal(t, "/bin/sh", img.Binary, "ProcessImages win")

	_, ok = (&Agent{}).processImage("busybox:1.35.0")
	assert.False(t, ok, "without a layout busybox does not run")
}
