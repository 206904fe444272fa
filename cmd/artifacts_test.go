package main

import (
	"flag"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/pkg/artifact"
)

// TestArtifactOptions: the jar fetcher (and the validator) refuse local files and non-public
// addresses unless the flags say otherwise.
func TestArtifactOptions(t *testing.T) {
	var o options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.bind(fs)
	require.NoError(t, fs.Parse(nil))
	f, err := o.artifacts()
	require.NoError(t, err)
	assert.Empty(t, f.LocalDir)
	assert.Empty(t, f.AllowedNetworks)

	require.NoError(t, fs.Parse([]string{"--artifact-local-dir=/jars", "--artifact-allowed-networks=10.1.2.3/16, fd00::/8"}))
	f, err = o.artifacts()
	require.NoError(t, err)
	assert.Equal(t, "/jars", f.LocalDir)
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00::/8")}, f.AllowedNetworks)
	// The validator accepts jars from the networks the fetcher may download from: a session job
	// moved over from the Apache operator with disallow-restricted-hosts: false keeps working.
	assert.Equal(t, f.AllowedNetworks, o.validator().AllowedNetworks)

	o.artifactNetworks = "10.0.0.0"
	_, err = o.artifacts()
	assert.ErrorContains(t, err, "--artifact-allowed-networks")
}

// TestZooKeeperOptions: ZooKeeper HA quorums get the address policy of jar hosts; only the
// ranges of --zookeeper-allowed-networks (not --artifact-allowed-networks) open it.
func TestZooKeeperOptions(t *testing.T) {
	var o options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.bind(fs)
	require.NoError(t, fs.Parse([]string{"--artifact-allowed-networks=10.0.0.0/8"}))
	zk, err := o.zooKeeper()
	require.NoError(t, err)
	assert.Empty(t, zk.AllowedNetworks)

	require.NoError(t, fs.Parse([]string{"--zookeeper-allowed-networks=10.96.1.2/12"}))
	zk, err = o.zooKeeper()
	require.NoError(t, err)
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}, zk.AllowedNetworks)

	o.zooKeeperNetworks = "zk.example"
	_, err = o.zooKeeper()
	assert.ErrorContains(t, err, "--zookeeper-allowed-networks")
}

// TestArtifactMinThroughputOption: downloads have a minimum throughput by default; 0 turns it
// off and a negative value is refused, naming the flag.
func TestArtifactMinThroughputOption(t *testing.T) {
	var o options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.bind(fs)
	require.NoError(t, fs.Parse(nil))
	f, err := o.artifacts()
	require.NoError(t, err)
	assert.EqualValues(t, artifact.DefaultMinThroughput, f.MinThroughput)

	require.NoError(t, fs.Parse([]string{"--artifact-min-throughput=0"}))
	f, err = o.artifacts()
	require.NoError(t, err)
	assert.Negative(t, f.MinThroughput, "the fetcher's negative is no minimum")

	require.NoError(t, fs.Parse([]string{"--artifact-min-throughput=-5"}))
	_, err = o.artifacts()
	assert.ErrorContains(t, err, "--artifact-min-throughput must be 0 (off) or a positive number of bytes per second, not -5")
}

// TestNamespaceShareOption: each namespace's share of a controller's workers is a quarter of
// --reconcile-parallelism unless set; a negative value is refused, naming the flag.
func TestNamespaceShareOption(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    int
		wantErr string
	}{
		{args: nil, want: 6},
		{args: []string{"--reconcile-parallelism=2"}, want: 1},
		{args: []string{"--reconcile-parallelism=100"}, want: 25},
		{args: []string{"--max-concurrent-reconciles-per-namespace=3"}, want: 3},
		{args: []string{"--max-concurrent-reconciles-per-namespace=-1"}, wantErr: "--max-concurrent-reconciles-per-namespace must be 0"},
	} {
		var o options
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		o.bind(fs)
		require.NoError(t, fs.Parse(tc.args))
		got, err := o.namespaceShare()
		if tc.wantErr != "" {
			assert.ErrorContains(t, err, tc.wantErr, "%v", tc.args)
			continue
		}
		require.NoError(t, err, "%v", tc.args)
		assert.Equal(t, tc.want, got, "%v", tc.args)
	}
}
