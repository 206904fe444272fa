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
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
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
	leaderNode      = "leader"
)

// flinkNodes are the nodes Flink's ZooKeeper HA services create below a cluster's node, in
// every version the operator runs (ZooKeeperUtils and HighAvailabilityOptions; Flink 1.20
// writes leader/{dispatcher,resource_manager,rest_server,job-<job id>}/connection_info,
// leader/latch, jobs/<job id>/{checkpoints,checkpoint_id_counter} and
// jobgraphs/<job id>/locks; 2.x execution-plans instead of jobgraphs); a top-level latch
// node in some 1.15+ releases; before 1.15 also leaderlatch,
// running_job_registry, checkpoints/<job id> and checkpoint-counter/<job id>.
var flinkNodes = []string{"leader", "latch", "leaderlatch", "jobs", "jobgraphs", "execution-plans",
	"checkpoints", "checkpoint-counter", "running_job_registry", "mesos-workers"}

// jobKeyed are the nodes whose children are named by job id; leader may have both job ids
// and the components below.
var jobKeyed = []string{"jobs", "running_job_registry", "checkpoint-counter"}

// leaderComponents are the leader nodes that are not a job's: the components' and, since the
// leader election became one per JobManager process, its latch (leader/latch). Before 1.15 the
// components' nodes had a _lock suffix. A job's is named by its id, since that change prefixed
// with "job-" (leader/job-<job id>).
var leaderComponents = map[string]bool{"dispatcher": true, "resource_manager": true, "rest_server": true, "latch": true,
	"dispatcher_lock": true, "resource_manager_lock": true, "rest_server_lock": true}

const leaderJobPrefix = "job-"

// latchNodes hold the leader latch: a JobManager alive holds an ephemeral node below.
var latchNodes = []string{"latch", "leaderlatch", "leader"}

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
	// known are the names of the nodes Flink's ZooKeeper HA services keep below base (the
	// defaults of all versions, and the configured ones): the only ones the operator deletes.
	known map[string]bool
	// jobIDs are the jobs the operator recorded for the cluster (lower case): the only jobs
	// whose metadata it deletes.
	jobIDs map[string]bool
	policy ZooKeeperPolicy
}

func newZooKeeper(conf flinkconf.Config, cluster string, jobIDs []string, policy ZooKeeperPolicy) (*ZooKeeper, error) {
	quorum := first(conf, keyQuorum, "")
	if strings.TrimSpace(quorum) == "" {
		return nil, fmt.Errorf("flinkConfiguration %s: ZooKeeper HA needs the quorum's addresses (host:port,...)", QuorumKey)
	}
	servers, chroot, err := parseQuorum(quorum)
	if err != nil {
		return nil, err
	}
	root := first(conf, keyRoot, defaultRoot)
	clusterID := first(conf, keyClusterID, defaultClusterID)
	graphs := first(conf, keyJobGraphs, defaultJobGraphs)
	plans := first(conf, keyExecutionPlans, first(conf, keyJobGraphs, defaultExecutionPlans))
	checkpoints := first(conf, keyCheckpoints, defaultCheckpoints)
	for _, part := range []struct{ key, value string }{
		{QuorumKey + " (its chroot)", chroot}, {keyRoot[0], root}, {keyClusterID[0], clusterID},
		{keyJobGraphs[0], graphs}, {keyExecutionPlans[0], plans}, {keyCheckpoints[0], checkpoints},
	} {
		if err := checkZNodePath(part.key, part.value); err != nil {
			return nil, err
		}
	}
	if zkPath(root) == "/" {
		// Every cluster on the quorum would have its node at the top (of the chroot), beside
		// whatever else the quorum holds (Kafka's /brokers, /config...), which the operator
		// deletes when the cluster goes.
		return nil, fmt.Errorf("flinkConfiguration %s: %q puts the cluster's node at the top of the quorum, beside other applications' znodes; name a node for Flink, e.g. %s", keyRoot[0], root, defaultRoot)
	}
	base := zkPath(chroot, root, clusterID)
	if base == zkPath(chroot, root) {
		// An empty cluster id would make the cluster's node the root shared by every cluster.
		return nil, fmt.Errorf("flinkConfiguration high-availability.cluster-id: empty; the cluster %s needs a node of its own", cluster)
	}
	z := &ZooKeeper{servers: servers, base: base, policy: policy,
		jobGraphs:         []string{zkPath(base, graphs)},
		legacyCheckpoints: zkPath(base, checkpoints),
		known:             map[string]bool{},
		jobIDs:            map[string]bool{},
	}
	if p := zkPath(base, plans); p != z.jobGraphs[0] {
		z.jobGraphs = append(z.jobGraphs, p)
	}
	for _, n := range flinkNodes {
		z.known[n] = true
	}
	for _, p := range []string{graphs, plans, checkpoints} {
		z.known[strings.SplitN(strings.Trim(p, "/"), "/", 2)[0]] = true
	}
	for _, id := range jobIDs {
		if id = strings.ToLower(strings.TrimSpace(id)); id != "" {
			z.jobIDs[id] = true
		}
	}
	return z, nil
}

// checkZNodePath refuses a path part Flink's client would refuse too, or that would lead the
// operator out of the cluster's node: "." and ".." segments, empty segments inside the path,
// and characters ZooKeeper does not allow in a path (controls, surrogates, U+FFF0-U+FFFF).
func checkZNodePath(key, value string) error {
	trimmed := strings.Trim(value, "/")
	if trimmed == "" {
		return nil
	}
	for _, seg := range strings.Split(trimmed, "/") {
		switch seg {
		case "":
			return fmt.Errorf("flinkConfiguration %s: %q has an empty segment (//); a znode path is /segment/segment", key, value)
		case ".", "..":
			return fmt.Errorf("flinkConfiguration %s: %q has a %q segment; a znode path names nodes below it, never its parent", key, value, seg)
		}
	}
	for _, r := range value {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || r >= 0xfff0 {
			return fmt.Errorf("flinkConfiguration %s: %q has the character %U, which ZooKeeper does not allow in a path", key, value, r)
		}
	}
	return nil
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

func first(conf flinkconf.Config, keys []string, def string) string {
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
// children; checkpoint pointers stay. Nothing is deleted unless the cluster's node is
// recognisably this cluster's (see Refusal).
func (z *ZooKeeper) DeleteJobGraphs(ctx context.Context) error {
	return z.session(ctx, func(c *zkConn) error {
		if _, err := z.inspect(c); err != nil {
			return err
		}
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

// Delete implements Store: what Flink keeps below the cluster's node, and the node once it is
// empty, as upstream's deleteZookeeperHAMetadata; the root and other clusters' nodes are left.
// Only Flink's own nodes are deleted (a node someone else added stays, and with it the
// cluster's node), and nothing at all unless the cluster's node is recognisably this
// cluster's (see Refusal).
func (z *ZooKeeper) Delete(ctx context.Context) error {
	return z.session(ctx, func(c *zkConn) error {
		children, err := z.inspect(c)
		if err != nil {
			return err
		}
		for _, child := range children {
			if err := c.deleteTree(zkPath(z.base, child)); err != nil {
				return err
			}
		}
		err = c.conn.Delete(z.base, -1)
		if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNotEmpty) {
			return fmt.Errorf("delete %s: %w", z.base, err)
		}
		return nil
	})
}

// RefusalReason says why the operator left a cluster's ZooKeeper node alone.
type RefusalReason string

const (
	// RefusedNotFlink: the node holds something Flink's HA services do not write, so it is
	// not (only) a Flink cluster's node: the chroot, path.root and cluster id are the
	// tenant's and may name another application's znodes.
	RefusedNotFlink RefusalReason = "NotFlinkHAMetadata"
	// RefusedLiveJobManager: a live ZooKeeper session holds the leader latch. The operator
	// deletes only after the cluster's own JobManager is gone, so it is another cluster's
	// JobManager using the same node (two namespaces' clusters of the same name on a shared
	// quorum), or this cluster's JobManager whose session has not expired yet.
	RefusedLiveJobManager RefusalReason = "LiveJobManager"
	// RefusedForeignJob: the node holds metadata of a job the operator never recorded for
	// this cluster: another cluster's of the same cluster id.
	RefusedForeignJob RefusalReason = "ForeignJob"
)

// Refusal is the error of a deletion the operator did not do because the cluster's node is not
// recognisably its cluster's. ZooKeeper paths are not namespaced: Flink's cluster id is the
// resource's name, so two namespaces' clusters of the same name share a node on a shared
// quorum. The operator never changes the path Flink uses (a migrated job must find its
// metadata), so it deletes below it only what is provably its cluster's: Flink's nodes only,
// with no live JobManager, holding only jobs it recorded.
type Refusal struct {
	Reason RefusalReason
	// Path is the cluster's node.
	Path string
	// Detail names what was found.
	Detail string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("HA metadata at %s left in place (%s): %s", r.Path, r.Reason, r.Detail)
}

// jobIDLength is the length of a Flink JobID in hex.
const jobIDLength = 32

func isJobID(s string) bool {
	if len(s) != jobIDLength {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

// inspect returns the children of the cluster's node, once it has checked the node is its
// cluster's: every child is one of Flink's nodes, the job-keyed nodes hold only job ids the
// operator recorded, and no live session holds the leader latch. Otherwise a *Refusal.
func (z *ZooKeeper) inspect(c *zkConn) ([]string, error) {
	children, err := c.children(z.base)
	if err != nil || len(children) == 0 {
		return nil, err
	}
	for _, child := range children {
		if !z.known[child] {
			return nil, &Refusal{Reason: RefusedNotFlink, Path: z.base,
				Detail: fmt.Sprintf("it holds %q, which Flink's ZooKeeper HA services do not write; check high-availability.zookeeper.quorum (chroot), path.root and cluster-id", child)}
		}
	}
	jobNodes := append(append([]string{}, z.jobGraphs...), z.legacyCheckpoints)
	for _, n := range jobKeyed {
		jobNodes = append(jobNodes, zkPath(z.base, n))
	}
	for _, p := range jobNodes {
		ids, err := c.children(p)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if !isJobID(id) {
				return nil, &Refusal{Reason: RefusedNotFlink, Path: z.base,
					Detail: fmt.Sprintf("%s holds %q, which is not a Flink job id", p, id)}
			}
			if z.jobIDs[strings.ToLower(id)] {
				continue
			}
			// A job graph is data in itself; a job's node under jobs/ is only the parent of
			// its checkpoint pointers and counter, which Flink leaves empty once the job
			// is cleaned up.
			if p == zkPath(z.base, jobsNode) {
				held, err := c.children(zkPath(p, id))
				if err != nil {
					return nil, err
				}
				if len(held) == 0 {
					continue
				}
			}
			return nil, &Refusal{Reason: RefusedForeignJob, Path: z.base,
				Detail: fmt.Sprintf("%s holds job %s, which is not this cluster's job; another cluster (another namespace's of the same name?) uses the same high-availability.cluster-id", zkPath(p, id), id)}
		}
	}
	// Leader nodes hold only ephemeral connection information (the live-session check below)
	// under persistent parents named by component or job id.
	leaders, err := c.children(zkPath(z.base, leaderNode))
	if err != nil {
		return nil, err
	}
	for _, l := range leaders {
		if !leaderComponents[l] && !isJobID(strings.TrimPrefix(l, leaderJobPrefix)) {
			return nil, &Refusal{Reason: RefusedNotFlink, Path: z.base,
				Detail: fmt.Sprintf("%s holds %q, which is neither a Flink component nor a job id", zkPath(z.base, leaderNode), l)}
		}
	}
	for _, n := range latchNodes {
		if p, err := c.liveNode(zkPath(z.base, n), 3); err != nil || p != "" {
			if err != nil {
				return nil, err
			}
			return nil, &Refusal{Reason: RefusedLiveJobManager, Path: z.base,
				Detail: fmt.Sprintf("the ephemeral node %s belongs to a live ZooKeeper session: a JobManager of another cluster with the same path uses it (or this cluster's has not expired yet)", p)}
		}
	}
	return children, nil
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

// liveNode returns the first ephemeral node at p or below it, depth levels deep at most: an
// ephemeral node lives as long as the session that made it.
func (c *zkConn) liveNode(p string, depth int) (string, error) {
	ok, stat, err := c.conn.Exists(p)
	switch {
	case err != nil:
		return "", fmt.Errorf("read %s: %w", p, err)
	case !ok:
		return "", nil
	case stat.EphemeralOwner != 0:
		return p, nil
	case depth == 0:
		return "", nil
	}
	children, err := c.children(p)
	if err != nil {
		return "", err
	}
	for _, child := range children {
		if live, err := c.liveNode(zkPath(p, child), depth-1); err != nil || live != "" {
			return live, err
		}
	}
	return "", nil
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
