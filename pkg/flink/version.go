package flink

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Version is a Flink release, as reported by GET /config.
type Version struct {
	Major, Minor, Patch int
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// AtLeast reports whether v is major.minor or newer.
func (v Version) AtLeast(major, minor int) bool {
	return v.Major > major || (v.Major == major && v.Minor >= minor)
}

// ParseVersion reads "1.20.3", "2.0-SNAPSHOT", "1.18.1-custom".
func ParseVersion(s string) (Version, error) {
	core := s
	if i := strings.IndexAny(core, "-+ "); i >= 0 {
		core = core[:i]
	}
	parts := strings.Split(core, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("flink: version %q is not major.minor[.patch]", s)
	}
	var nums [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return Version{}, fmt.Errorf("flink: version %q is not major.minor[.patch]", s)
		}
		nums[i] = n
	}
	return Version{Major: nums[0], Minor: nums[1], Patch: nums[2]}, nil
}

// Version returns the cluster's Flink version, asking the JobManager once (GET /config) and
// remembering it for the life of the client.
func (c *Client) Version(ctx context.Context) (Version, error) {
	c.versionMu.Lock()
	cached := c.version
	c.versionMu.Unlock()
	if cached != nil {
		return *cached, nil
	}
	cfg, err := c.Config(ctx)
	if err != nil {
		return Version{}, err
	}
	v, err := ParseVersion(cfg.FlinkVersion)
	if err != nil {
		return Version{}, &Error{Kind: KindMalformed, Op: "get version", Message: err.Error()}
	}
	c.versionMu.Lock()
	c.version = &v
	c.versionMu.Unlock()
	return v, nil
}

// requireVersion fails with KindUnsupported when the cluster is older than major.minor.
func (c *Client) requireVersion(ctx context.Context, op string, major, minor int) (Version, error) {
	v, err := c.Version(ctx)
	if err != nil {
		return v, err
	}
	if !v.AtLeast(major, minor) {
		return v, &Error{Kind: KindUnsupported, Op: op,
			Message: fmt.Sprintf("needs Flink %d.%d or newer, the cluster runs %s", major, minor, v)}
	}
	return v, nil
}
