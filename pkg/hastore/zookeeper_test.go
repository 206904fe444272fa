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

	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/hastore"
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
		// As Flink 1.20 leaves them once its JobManager stopped (the connection information
		// and latch entries are ephemeral).
		base + "/leader/dispatcher",
		base + "/leader/resource_manager",
		base + "/leader/rest_server",
		base + "/leader/job-00000000000000000000000000000001",
		base + "/leader/latch",
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

func zkConf(quorum string, extra ...string) flinkconf.Config {
	conf := flinkconf.Config{"high-availability.type": "zookeeper", "high-availability.zookeeper.quorum": quorum,
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
		conf flinkconf.Config
		base string
	}{
		"defaults":                    {zkConf(srv.Addr), "/flink/app"},
		"root, chroot, legacy HA key": {flinkconf.Config{"high-availability": "ZooKeeper", "high-availability.zookeeper.quorum": srv.Addr + "/tenant", "high-availability.zookeeper.path.root": "/ha/", "high-availability.cluster-id": "/app"}, "/tenant/ha/app"},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, hastore.KindZooKeeper, hastore.KindOf(tc.conf))
			store, err := hastore.For(tc.conf, nil, "ns", "app", []string{"00000000000000000000000000000001"}, loopback)
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
	store, err := hastore.For(zkConf(srv.Addr), nil, "ns", "app", nil, hastore.ZooKeeperPolicy{Timeout: 10 * time.Second})
	require.NoError(t, err)
	_, err = store.HasJobMetadata(context.Background())
	require.Error(t, err)
	assert.ErrorContains(t, err, "high-availability.zookeeper.quorum")
	assert.ErrorContains(t, err, "--zookeeper-allowed-networks")

	store, err = hastore.For(zkConf("localhost:"+port(t, srv.Addr)), nil, "ns", "app", nil, hastore.ZooKeeperPolicy{Timeout: 10 * time.Second})
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
	store, err := hastore.For(zkConf(l.Addr().String()), nil, "ns", "app", nil, policy)
	require.NoError(t, err)
	_, err = store.HasJobMetadata(context.Background())
	assert.ErrorContains(t, err, "did not answer")
}

func TestZooKeeperConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		conf flinkconf.Config
		want string
	}{
		"no quorum":         {flinkconf.Config{"high-availability.type": "zookeeper"}, "high-availability.zookeeper.quorum"},
		"bad server":        {zkConf("a b:2181"), "is not host:port"},
		"empty cluster id":  {zkConf("zk:2181", "high-availability.cluster-id", "/"), "high-availability.cluster-id"},
		"root at the top":   {zkConf("zk:2181/tenant", "high-availability.zookeeper.path.root", "//"), "high-availability.zookeeper.path.root: \"//\" puts the cluster's node at the top"},
		"empty segment":     {zkConf("zk:2181", "high-availability.zookeeper.path.root", "/a//b"), "empty segment"},
		"dot segment":       {zkConf("zk:2181/a/./b"), "high-availability.zookeeper.quorum (its chroot): \"/a/./b\" has a \".\" segment"},
		"parent job graphs": {zkConf("zk:2181", "high-availability.zookeeper.path.jobgraphs", "/../../brokers"), "high-availability.zookeeper.path.jobgraphs"},
		"control character": {zkConf("zk:2181", "high-availability.cluster-id", "a\x00b"), "U+0000"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := hastore.For(tc.conf, nil, "ns", "app", []string{"00000000000000000000000000000001"}, loopback)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestKindOf(t *testing.T) {
	assert.Equal(t, hastore.KindZooKeeper, hastore.KindOf(flinkconf.Config{"high-availability.type": "zookeeper"}))
	assert.Equal(t, hastore.KindZooKeeper, hastore.KindOf(flinkconf.Config{"high-availability": "ZOOKEEPER"}))
	assert.Equal(t, hastore.KindKubernetes, hastore.KindOf(flinkconf.Config{"high-availability.type": "kubernetes"}))
	assert.Equal(t, hastore.KindKubernetes, hastore.KindOf(flinkconf.Config{"high-availability.type": "kubernetes", "high-availability": "zookeeper"}),
		"high-availability.type wins over the deprecated key")
}

func port(t *testing.T, addr string) string {
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return p
}

// foreignTree is what another user of the quorum keeps at a node: a Kafka-like tree.
func foreignTree(t *testing.T, c *zk.Conn, base string) []string {
	t.Helper()
	nodes := []string{base + "/ids/0", base + "/topics/orders/partitions/0/state", base + "/seqid"}
	for _, p := range nodes {
		createAll(t, c, p)
	}
	return nodes
}

// deleteAll runs what the operator runs when the cluster's resource is deleted, and what a
// stateless upgrade runs, and returns the first refusal.
func deleteAll(conf flinkconf.Config, cluster string) error {
	store, err := hastore.For(conf, nil, "tenant", cluster, []string{"00000000000000000000000000000002"}, loopback)
	if err != nil {
		return err
	}
	if err := store.DeleteJobGraphs(context.Background()); err != nil {
		return err
	}
	return store.Delete(context.Background())
}

// TestZooKeeperDeletionIsConfined: the base path below which the operator deletes is made of
// the tenant's chroot, path.root and cluster id, so the tenant could point it at another
// application's znodes, or at another tenant's cluster of the same name on a shared quorum.
// Each such base is refused, and the other party's znodes are still there afterwards.
func TestZooKeeperDeletionIsConfined(t *testing.T) {
	srv := zkserver.Start(t, "127.0.0.1")
	c := srv.Client(t)

	t.Run("path.root / with the cluster named brokers points at Kafka's /brokers", func(t *testing.T) {
		nodes := foreignTree(t, c, "/brokers")
		conf := zkConf(srv.Addr, "high-availability.zookeeper.path.root", "/", "high-availability.cluster-id", "brokers")
		err := deleteAll(conf, "brokers")
		assert.ErrorContains(t, err, "high-availability.zookeeper.path.root")
		for _, p := range nodes {
			assert.True(t, exists(t, c, p), p)
		}
	})

	t.Run("a chroot and root that name another application's node", func(t *testing.T) {
		nodes := foreignTree(t, c, "/other/chroot/config")
		conf := zkConf(srv.Addr+"/other", "high-availability.zookeeper.path.root", "/chroot", "high-availability.cluster-id", "config")
		err := deleteAll(conf, "config")
		assert.ErrorContains(t, err, "/other/chroot/config")
		for _, p := range nodes {
			assert.True(t, exists(t, c, p), p)
		}
		conf = zkConf(srv.Addr+"/other/chroot", "high-availability.zookeeper.path.root", "/", "high-availability.cluster-id", "config")
		assert.ErrorContains(t, deleteAll(conf, "config"), "high-availability.zookeeper.path.root")
		for _, p := range nodes {
			assert.True(t, exists(t, c, p), p)
		}
	})

	t.Run("another namespace's stopped cluster of the same name", func(t *testing.T) {
		// Tenant A's cluster "orders" is suspended with its HA metadata kept for a last-state
		// resume; tenant B's cluster "orders" (default root, default cluster id = name) is
		// deleted. Its recorded job is another one.
		flinkLayout(t, c, "/flink/orders")
		err := deleteAll(zkConf(srv.Addr, "high-availability.cluster-id", "orders"), "orders")
		require.Error(t, err)
		assert.ErrorContains(t, err, "00000000000000000000000000000001")
		assert.True(t, exists(t, c, "/flink/orders/jobgraphs/00000000000000000000000000000001"))
		assert.True(t, exists(t, c, "/flink/orders/jobs/00000000000000000000000000000001/checkpoints/0000000000000000007"))
	})

	t.Run("another namespace's running session cluster of the same name", func(t *testing.T) {
		// A live JobManager holds an ephemeral node in the leader latch: it is not this
		// cluster's, whose JobManager is gone before anything is deleted.
		createAll(t, c, "/flink/session/leader/dispatcher/connection_info")
		createAll(t, c, "/flink/session/latch")
		other := srv.Client(t)
		_, err := other.Create("/flink/session/latch/_c_0a6e9a44-latch-0000000000", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		require.NoError(t, err)
		err = deleteAll(zkConf(srv.Addr, "high-availability.cluster-id", "session"), "session")
		assert.ErrorContains(t, err, "latch")
		assert.True(t, exists(t, c, "/flink/session/leader/dispatcher/connection_info"))
		assert.True(t, exists(t, c, "/flink/session/latch/_c_0a6e9a44-latch-0000000000"))
	})

	t.Run("the cluster's own metadata and empty parents Flink leaves are deleted", func(t *testing.T) {
		base := "/flink/tidy"
		for _, p := range []string{
			base + "/jobgraphs/00000000000000000000000000000002",
			base + "/jobs/00000000000000000000000000000002/checkpoints/0000000000000000001",
			base + "/jobs/00000000000000000000000000000009", // a cleaned-up job's empty parent
			base + "/leader/00000000000000000000000000000009",
			base + "/leader/dispatcher",
			base + "/latch",
		} {
			createAll(t, c, p)
		}
		require.NoError(t, deleteAll(zkConf(srv.Addr, "high-availability.cluster-id", "tidy"), "tidy"))
		assert.False(t, exists(t, c, base))
		assert.True(t, exists(t, c, "/flink"))
	})

	t.Run("a node someone else added below the cluster's keeps everything", func(t *testing.T) {
		base := "/flink/mixed"
		createAll(t, c, base+"/jobgraphs/00000000000000000000000000000002")
		createAll(t, c, base+"/brokers/ids/0")
		err := deleteAll(zkConf(srv.Addr, "high-availability.cluster-id", "mixed"), "mixed")
		var refusal *hastore.Refusal
		require.ErrorAs(t, err, &refusal)
		assert.Equal(t, hastore.RefusedNotFlink, refusal.Reason)
		assert.True(t, exists(t, c, base+"/brokers/ids/0"))
		assert.True(t, exists(t, c, base+"/jobgraphs/00000000000000000000000000000002"))
	})

	t.Run("dot-dot segments", func(t *testing.T) {
		foreignTree(t, c, "/kafka/brokers")
		for _, conf := range []flinkconf.Config{
			zkConf(srv.Addr+"/flink/../kafka", "high-availability.cluster-id", "brokers"),
			zkConf(srv.Addr, "high-availability.zookeeper.path.root", "/flink/../kafka", "high-availability.cluster-id", "brokers"),
			zkConf(srv.Addr, "high-availability.zookeeper.path.root", "/kafka", "high-availability.cluster-id", "x/../brokers"),
		} {
			err := deleteAll(conf, "brokers")
			assert.ErrorContains(t, err, "flinkConfiguration high-availability.")
			assert.ErrorContains(t, err, "..")
		}
		assert.True(t, exists(t, c, "/kafka/brokers/ids/0"))
	})
}
