package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/flink-operator/flink-operator/pkg/leaderfence"
)

// TestLeaderFenceOptions: without leader election nothing is fenced (the only replica leads);
// a lease no longer than the renew deadline leaves no margin and is refused, naming both flags.
func TestLeaderFenceOptions(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	fence, election, err := (&options{}).leaderFence(cfg)
	require.NoError(t, err)
	assert.Nil(t, fence)
	assert.Nil(t, election)
	assert.NoError(t, fence.Check("POST /jobs/:jobid/stop"), "a nil fence holds")

	_, _, err = (&options{enableLeaderElection: true, leaderElectionID: "x", leaderElectionNS: "ns",
		leaseDuration: 3 * time.Second, renewDeadline: 3 * time.Second}).leaderFence(cfg)
	require.ErrorContains(t, err, "--leader-election-lease-duration (3s) must be longer than --leader-election-renew-deadline (3s)")
}

// TestLeaderFenceFollowsTheLease: the lock newManager gives the election is the fenced one:
// the fence holds once this replica writes the Lease, and not before.
func TestLeaderFenceFollowsTheLease(t *testing.T) {
	env := testEnv(t)
	ns := env.NewNamespace(t, "fence")
	fence, election, err := (&options{enableLeaderElection: true, leaderElectionID: "flink-operator-fence", leaderElectionNS: ns,
		leaseDuration: 15 * time.Second, renewDeadline: 10 * time.Second}).leaderFence(env.Config)
	require.NoError(t, err)
	require.ErrorIs(t, fence.Check("delete the cluster"), leaderfence.ErrNotHeld, "not held before the Lease is taken")

	lock := election.Lock
	before := time.Now()
	require.NoError(t, lock.Create(context.Background(), resourcelock.LeaderElectionRecord{HolderIdentity: lock.Identity(),
		LeaseDurationSeconds: 15, RenewTime: metav1.Now(), AcquireTime: metav1.Now()}))
	after := time.Now()
	require.NoError(t, fence.Check("delete the cluster"))
	// Held for the renew deadline (lease 15 s minus a 5 s margin) after the write was sent.
	assert.True(t, fence.Held(before.Add(9*time.Second)))
	assert.False(t, fence.Held(after.Add(10*time.Second)))
}
