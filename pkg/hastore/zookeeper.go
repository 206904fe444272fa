package hastore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/flink-operator/flink-operator/pkg/addrpolicy"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// Flink's ZooKeeper HA keys (HighAvailabilityOptions), each with its deprecated names, and
// their defaults.
var (
	keyQuorum         = []string{"high-availability.zookeeper.quorum", "recovery.zookeeper.quorum"}
	keyRoot           = []string{"high-availability.zookeeper.path.root", "recovery.zookeeper.path.root"}
	keyClusterID      = []string{"high-availability.cluster-id", "high-availability.zookeeper.path.namespace", "recovery.zookeeper.path.namespace"}
	keyJobGraphs      = []string{"high-availability.zookeeper.path.jobgraphs", "recovery.zookeeper.path.jobgraphs"}
	keyExecutionPlans = []string{"high-availability.zookeeper.path.execution-plans"}
	keyCheckpoints    = []string{"high-availability.zookeeper.path.checkpoints", "recovery.zookeeper.path.checkpoints"}
)

// QuorumKey is the configuration key naming the ZooKeeper quorum, for errors.
const QuorumKey = "high-availability.zookeeper.quorum"

const (
	defaultRoot           = "/flink"
	defaultClusterID      = "/default"
	defaultJobGraphs      = "/jobgraphs"       // Flink 1.x
	defaultExecutionPlans = "/execution-plans" // Flink 2.x
	defaultCheckpoints    = "/checkpoints"     // before Flink 1.15: <checkpoints>/<job id>/<checkpoint>
	// Since Flink 1.15 a job's checkpoint pointers are below <cluster>/jobs/<job id>/checkpoints.
	jobsNode        = "jobs"
	checkpointsNode = "checkpoints"
)

// ZooKeeperPolicy bounds what the operator does for a tenant's ZooKeeper quorum. The quorum's
// address comes from the tenant's flinkConfiguration, so the operator connects to it under the
// same address policy as to a tenant's jar host: special-purpose ranges (loopback, RFC 1918,
// link-local and metadata addresses, ...) are refused unless AllowedNetworks opens them, and
// the check is on the address connected to, so a name resolving elsewhere later cannot get
// past it. The operator authenticates to nobody: it can touch only what Flink's default open
// ACL lets anyone on the network touch, which the tenant's own JobManager can too.
type ZooKeeperPolicy struct {
	// AllowedNetworks are ranges a quorum may be in although they are not public addresses
	// (an in-cluster ZooKeeper's pod or Service range).
	AllowedNetworks []netip.Prefix
	// Timeout bounds each Store call, connection included (DefaultZooKeeperTimeout when zero).
	Timeout time.Duration
}

// DefaultZooKeeperTimeout bounds one Store call on ZooKeeper.
const DefaultZooKeeperTimeout = 15 * time.Second

const (
	// dialTimeout bounds connecting to one server of the quorum.
	dialTimeout = 5 * time.Second
	// sessionTimeout is the session the operator asks for; nothing it writes is ephemeral.
	sessionTimeout = 10 * time.Second
	// maxReply bounds one reply of the quorum (ZooKeeper's own jute.maxbuffer default is 1 MiB).
	maxReply = 4 << 20
	// maxNodes bounds how many znodes one call walks, so a quorum holding (or faking) a huge
	// tree cannot keep the operator busy.
	maxNodes = 100000
)

// ZooKeeper is ZooKeeper HA: the znodes below <chroot><path.root>/<cluster-id>.
type ZooKeeper struct {
	servers []string
	// base is the cluster's node: <chroot><root>/<cluster-id>.
	base string
	// jobGraphs are the nodes whose children are job graphs or execution plans.
	jobGraphs []string
	// legacyCheckpoints is the pre-1.15 checkpoints node.
	legacyCheckpoints string
	policy            ZooKeeperPolicy
}

func newZooKeeper(conf native.Config, cluster string, policy ZooKeeperPolicy) (*ZooKeeper, error) {
	quorum := first(conf, keyQuorum, "")
	if strings.TrimSpace(quorum) == "" {
		return nil, fmt.Errorf("flinkConfiguration %s: ZooKeeper HA needs the quorum's addresses (host:port,...)", QuorumKey)
	}
	servers, chroot, err := parseQuorum(quorum)
	if err != nil {
		return nil, err
	}
	clusterID := first(conf, keyClusterID, defaultClusterID)
	base := zkPath(chroot, first(conf, keyRoot, defaultRoot), clusterID)
	if base == zkPath(chroot, first(conf, keyRoot, defaultRoot)) {
		// An empty cluster id would make the cluster's node the root shared by every cluster.
		return nil, fmt.Errorf("flinkConfiguration high-availability.cluster-id: empty; the cluster %s needs a node of its own", cluster)
	}
	graphs := first(conf, keyJobGraphs, defaultJobGraphs)
	plans := first(conf, keyExecutionPlans, first(conf, keyJobGraphs, defaultExecutionPlans))
	z := &ZooKeeper{servers: servers, base: base, policy: policy,
		jobGraphs:         []string{zkPath(base, graphs)},
		legacyCheckpoints: zkPath(base, first(conf, keyCheckpoints, defaultCheckpoints)),
	}
	if p := zkPath(base, plans); p != z.jobGraphs[0] {
		z.jobGraphs = append(z.jobGraphs, p)
	}
	return z, nil
}

// Path is the cluster's node, below which all its HA metadata is.
func (z *ZooKeeper) Path() string { return z.base }

// parseQuorum reads a ZooKeeper connect string as Flink's client (Curator) does:
// "host:port,host:port" with an optional chroot suffix "/path"; a port defaults to 2181.
func parseQuorum(quorum string) (servers []string, chroot string, err error) {
	hosts := strings.TrimSpace(quorum)
	if i := strings.Index(hosts, "/"); i >= 0 {
		hosts, chroot = hosts[:i], hosts[i:]
	}
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h == "" {
			continue
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = strings.Trim(h, "[]"), "2181"
		}
		if host == "" || strings.ContainsAny(host, " \t\r\n@?#") {
			return nil, "", fmt.Errorf("flinkConfiguration %s: %q is not host:port", QuorumKey, h)
		}
		servers = append(servers, net.JoinHostPort(host, port))
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("flinkConfiguration %s: no server in %q", QuorumKey, quorum)
	}
	return servers, chroot, nil
}

// zkPath joins znode path parts as Flink's ZooKeeperUtils.generateZookeeperPath does: slashes
// around each part are dropped, empty parts skipped, and the result starts with one slash.
func zkPath(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p = strings.Trim(p, "/"); p != "" {
			kept = append(kept, p)
		}
	}
	return "/" + strings.Join(kept, "/")
}

func first(conf native.Config, keys []string, def string) string {
	for _, k := range keys {
		if v, ok := conf[k]; ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
	}
	return def
}

// HasJobMetadata implements Store: a job graph or execution plan, or a job's node (its
// checkpoint pointers and counter), or a pre-1.15 job checkpoints node.
func (z *ZooKeeper) HasJobMetadata(ctx context.Context) (bool, error) {
	var has bool
	err := z.session(ctx, func(c *zkConn) error {
		for _, p := range append(append([]string{}, z.jobGraphs...), zkPath(z.base, jobsNode), z.legacyCheckpoints) {
			children, err := c.children(p)
			if err != nil {
				return err
			}
			if len(children) > 0 {
				has = true
				return nil
			}
		}
		return nil
	})
	return has, err
}

// HasCheckpoint implements Store: a completed checkpoint below a job's checkpoints node.
func (z *ZooKeeper) HasCheckpoint(ctx context.Context) (bool, error) {
	var has bool
	err := z.session(ctx, func(c *zkConn) error {
		jobs, err := c.children(zkPath(z.base, jobsNode))
		if err != nil {
			return err
		}
		for _, job := range jobs {
			cps, err := c.children(zkPath(z.base, jobsNode, job, checkpointsNode))
			if err != nil {
				return err
			}
			if len(cps) > 0 {
				has = true
				return nil
			}
		}
		legacy, err := c.children(z.legacyCheckpoints)
		if err != nil {
			return err
		}
		for _, job := range legacy {
			cps, err := c.children(zkPath(z.legacyCheckpoints, job))
			if err != nil {
				return err
			}
			if len(cps) > 0 {
				has = true
				return nil
			}
		}
		return nil
	})
	return has, err
}

// DeleteJobGraphs implements Store: the job graphs' (execution plans') nodes lose their
// children; checkpoint pointers stay.
func (z *ZooKeeper) DeleteJobGraphs(ctx context.Context) error {
	return z.session(ctx, func(c *zkConn) error {
		for _, p := range z.jobGraphs {
			children, err := c.children(p)
			if err != nil {
				return err
			}
			for _, child := range children {
				if err := c.deleteTree(zkPath(p, child)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Delete implements Store: the cluster's node and everything below it, as upstream's
// deleteZookeeperHAMetadata. The root and other clusters' nodes are left.
func (z *ZooKeeper) Delete(ctx context.Context) error {
	return z.session(ctx, func(c *zkConn) error { return c.deleteTree(z.base) })
}

// session connects to the quorum, runs f and closes the connection, all within the policy's
// timeout: the client library retries a silent or unreachable quorum forever, so on the
// deadline the connection is closed, which fails whatever request waits.
func (z *ZooKeeper) session(ctx context.Context, f func(*zkConn) error) error {
	timeout := z.policy.Timeout
	if timeout <= 0 {
		timeout = DefaultZooKeeperTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	guard := addrpolicy.NewGuard(z.policy.AllowedNetworks)
	refused := make(chan error, 1)
	dial := func(network, address string, timeout time.Duration) (net.Conn, error) {
		d := &net.Dialer{Timeout: min(timeout, dialTimeout), Control: guard.Safe}
		conn, err := d.DialContext(ctx, network, address)
		if err != nil && addrpolicy.Refused(err) {
			select {
			case refused <- err:
			default:
			}
		}
		return conn, err
	}
	conn, _, err := zk.Connect(z.servers, sessionTimeout, zk.WithDialer(dial), zk.WithLogger(discard{}),
		zk.WithLogInfo(false), zk.WithMaxBufferSize(maxReply))
	if err != nil {
		return fmt.Errorf("ZooKeeper %s: %w", strings.Join(z.servers, ","), err)
	}
	done := make(chan error, 1)
	go func() { done <- f(&zkConn{conn: conn}) }()
	select {
	case err = <-done:
		conn.Close()
	case err = <-refused:
		conn.Close()
		err = fmt.Errorf("ZooKeeper quorum %s (%s): %w; the operator connects to non-public addresses only in --zookeeper-allowed-networks",
			strings.Join(z.servers, ","), QuorumKey, err)
	case <-ctx.Done():
		conn.Close()
		err = fmt.Errorf("ZooKeeper quorum %s (%s) did not answer within %s: %w", strings.Join(z.servers, ","), QuorumKey, timeout, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("HA metadata of %s: %w", z.base, err)
	}
	return nil
}

// zkConn is one session's requests, counting the znodes they touch.
type zkConn struct {
	conn  *zk.Conn
	nodes int
}

// children lists a node's children; a missing node has none.
func (c *zkConn) children(p string) ([]string, error) {
	children, _, err := c.conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", p, err)
	}
	c.nodes += len(children)
	if c.nodes > maxNodes {
		return nil, fmt.Errorf("list %s: more than %d znodes", p, maxNodes)
	}
	return children, nil
}

// deleteTree deletes a node and everything below it, children first. A child created meanwhile
// (a JobManager still running) makes the parent's deletion fail with "not empty": the walk is
// tried again a few times, then the error is returned.
func (c *zkConn) deleteTree(p string) error {
	for attempt := 0; ; attempt++ {
		children, err := c.children(p)
		if err != nil {
			return err
		}
		for _, child := range children {
			if err := c.deleteTree(path.Join(p, child)); err != nil {
				return err
			}
		}
		err = c.conn.Delete(p, -1)
		switch {
		case err == nil, errors.Is(err, zk.ErrNoNode):
			return nil
		case errors.Is(err, zk.ErrNotEmpty) && attempt < 3:
			continue
		default:
			return fmt.Errorf("delete %s: %w", p, err)
		}
	}
}

// discard drops the client library's log lines (connection attempts); errors reach the caller.
type discard struct{}

func (discard) Printf(string, ...any) {}
