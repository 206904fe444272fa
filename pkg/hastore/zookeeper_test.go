package hastore_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-operator/flink-operator/pkg/hastore"
	"github.com/flink-operator/flink-operator/pkg/native"
	"github.com/flink-operator/flink-operator/test/zkserver"
)

var loopback = hastore.ZooKeeperPolicy{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

// flinkLayout writes what Flink 1.15+'s ZooKeeper HA services keep for a cluster with one job:
// its job graph, its checkpoint pointers and counter, and leader election nodes.
func flinkLayout(t *testing.T, c *zk.Conn, base string) {
	t.Helper()
	for _, p := range []string{
		base + "/jobgraphs/00000000000000000000000000000001",
		base + "/execution-plans/00000000000000000000000000000001",
		base + "/jobs/00000000000000000000000000000001/checkpoints/0000000000000000007",
		base + "/jobs/00000000000000000000000000000001/checkpoint_id_counter",
		base + "/leader/dispatcher/connection_info",
	} {
		createAll(t, c, p)
	}
}

func createAll(t *testing.T, c *zk.Conn, p string) {
	t.Helper()
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			_, err := c.Create(p[:i], []byte("x"), 0, zk.WorldACL(zk.PermAll))
			if err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatalf("create %s: %v", p[:i], err)
			}
		}
	}
}

func exists(t *testing.T, c *zk.Conn, p string) bool {
	t.Helper()
	ok, _, err := c.Exists(p)
	require.NoError(t, err)
	return ok
}

func zkConf(quorum string, extra ...string) native.Config {
	conf := native.Config{"high-availability.type": "zookeeper", "high-availability.zookeeper.quorum": quorum,
		"high-availability.cluster-id": "app"}
	for i := 0; i+1 < len(extra); i += 2 {
		conf[extra[i]] = extra[i+1]
	}
	return conf
}

// TestZooKeeperStore runs the Store on a real ZooKeeper server holding the layout Flink writes:
// it finds the job's metadata and checkpoint, removes only the job graphs, and deletes only the
// cluster's own node (another cluster's, beside it, stays).
func TestZooKeeperStore(t *testing.T) {
	srv := zkserver.Start(t, "127.0.0.1")
	c := srv.Client(t)
	ctx := context.Background()

	for name, tc := range map[string]struct {
		conf native.Config
		base string
	}{
		"defaults":                    {zkConf(srv.Addr), "/flink/app"},
		"root, chroot, legacy HA key": {native.Config{"high-availability": "ZooKeeper", "high-availability.zookeeper.quorum": srv.Addr + "/tenant", "high-availability.zookeeper.path.root": "/ha/", "high-availability.cluster-id": "/app"}, "/tenant/ha/app"},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, hastore.KindZooKeeper, hastore.KindOf(tc.conf))
			store, err := hastore.For(tc.conf, nil, "ns", "app", loopback)
			require.NoError(t, err)
			assert.Equal(t, tc.base, store.(*hastore.ZooKeeper).Path())

			has, err := store.HasJobMetadata(ctx)
			require.NoError(t, err)
			assert.False(t, has, "nothing written yet")

			createAll(t, c, tc.base+"/leader/dispatcher/connection_info")
			has, err = store.HasJobMetadata(ctx)
			require.NoError(t, err)
			assert.False(t, has, "leader election alone holds no job")

			flinkLayout(t, c, tc.base)
			other := tc.base + "-other"
			flinkLayout(t, c, other)
			has, err = store.HasJobMetadata(ctx)
			require.NoError(t, err)
			assert.True(t, has)
			has, err = store.HasCheckpoint(ctx)
			require.NoError(t, err)
			assert.True(t, has)

			require.NoError(t, store.DeleteJobGraphs(ctx))
			assert.False(t, exists(t, c, tc.base+"/jobgraphs/00000000000000000000000000000001"))
			assert.False(t, exists(t, c, tc.base+"/execution-plans/00000000000000000000000000000001"))
			assert.True(t, exists(t, c, tc.base+"/jobs/00000000000000000000000000000001/checkpoints/0000000000000000007"))
			has, err = store.HasJobMetadata(ctx)
			require.NoError(t, err)
			assert.True(t, has, "the job's checkpoint pointers are still there")

			require.NoError(t, store.Delete(ctx))
			assert.False(t, exists(t, c, tc.base))
			assert.True(t, exists(t, c, other+"/jobgraphs/00000000000000000000000000000001"), "another cluster's metadata is left")
			has, err = store.HasJobMetadata(ctx)
			require.NoError(t, err)
			assert.False(t, has)
			require.NoError(t, store.Delete(ctx), "deleting nothing is fine")
		})
	}
}

// TestZooKeeperQuorumAddressPolicy: the quorum is the tenant's; a loopback or private address
// is refused at connect unless the operator allows its range, with an error naming the key and
// the flag.
func TestZooKeeperQuorumAddressPolicy(t *testing.T) {
	srv := zkserver.Start(t, "127.0.0.1")
	store, err := hastore.For(zkConf(srv.Addr), nil, "ns", "app", hastore.ZooKeeperPolicy{Timeout: 10 * time.Second})
	require.NoError(t, err)
	_, err = store.HasJobMetadata(context.Background())
	require.Error(t, err)
	assert.ErrorContains(t, err, "high-availability.zookeeper.quorum")
	assert.ErrorContains(t, err, "--zookeeper-allowed-networks")

	store, err = hastore.For(zkConf("localhost:"+port(t, srv.Addr)), nil, "ns", "app", hastore.ZooKeeperPolicy{Timeout: 10 * time.Second})
	require.NoError(t, err)
	assert.ErrorContains(t, store.Delete(context.Background()), "--zookeeper-allowed-networks", "a name is checked at the address it resolves to")
}

// TestSilentQuorumTimesOut: a quorum that accepts connections and never answers costs one
// bounded call, not a worker forever.
func TestSilentQuorumTimesOut(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() })
		}
	}()
	policy := loopback
	policy.Timeout = time.Second
	store, err := hastore.For(zkConf(l.Addr().String()), nil, "ns", "app", policy)
	require.NoError(t, err)
	_, err = store.HasJobMetadata(context.Background())
	assert.ErrorContains(t, err, "did not answer")
}

func TestZooKeeperConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		conf native.Config
		want string
	}{
		"no quorum":        {native.Config{"high-availability.type": "zookeeper"}, "high-availability.zookeeper.quorum"},
		"bad server":       {zkConf("a b:2181"), "is not host:port"},
		"empty cluster id": {zkConf("zk:2181", "high-availability.cluster-id", "/"), "high-availability.cluster-id"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := hastore.For(tc.conf, nil, "ns", "app", loopback)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestKindOf(t *testing.T) {
	assert.Equal(t, hastore.KindZooKeeper, hastore.KindOf(native.Config{"high-availability.type": "zookeeper"}))
	assert.Equal(t, hastore.KindZooKeeper, hastore.KindOf(native.Config{"high-availability": "ZOOKEEPER"}))
	assert.Equal(t, hastore.KindKubernetes, hastore.KindOf(native.Config{"high-availability.type": "kubernetes"}))
	assert.Equal(t, hastore.KindKubernetes, hastore.KindOf(native.Config{"high-availability.type": "kubernetes", "high-availability": "zookeeper"}),
		"high-availability.type wins over the deprecated key")
}

func port(t *testing.T, addr string) string {
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return p
}
