package localcluster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An API server that cannot bind its port exits at once. Start must see that, say why with
// the end of its log, and try again on new ports, rather than poll a port nobody will ever
// serve until its timeout.
func TestStartGivesUpOnAnAPIServerThatExitedAndSaysWhy(t *testing.T) {
	bin := t.TempDir()
	script := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	script("etcd", "exec sleep 60")
	script("kube-apiserver", `echo "failed to listen on 127.0.0.1: bind: address already in use"; exit 1`)
	script("kube-controller-manager", "exec sleep 60")
	script("kube-scheduler", "exec sleep 60")
	script(localPathProvisioner, "exec sleep 60")

	var log bytes.Buffer
	start := time.Now()
	_, err := Start(context.Background(), Options{BinDir: bin, Dir: t.TempDir(), Log: &log})
	require.Error(t, err)
	require.Less(t, time.Since(start), 30*time.Second, "Start waited for a process that had exited")
	require.Contains(t, err.Error(), "kube-apiserver exited before the API server was ready")
	require.Contains(t, err.Error(), "address already in use")
	require.Equal(t, 2, strings.Count(log.String(), "starting again on new ports"), log.String())
}
