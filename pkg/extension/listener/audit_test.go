package listener

import (
	"context"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
)

func TestAuditLogWritesEventsAndLifecycleChanges(t *testing.T) {
	var lines []string
	audit := AuditLog{Log: funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})}
	dep := Resource{Kind: "FlinkDeployment", Namespace: "ns", Name: "wordcount"}
	ctx := context.Background()

	audit.OnEvent(ctx, Event{Resource: dep, Type: "Normal", Reason: "JobStatusChanged", Message: "Job status changed from RUNNING to FINISHED"})
	life := func(state, err string) Lifecycle { return Lifecycle{State: state, Error: err} }
	audit.OnStatusChange(ctx, StatusChange{Resource: dep, Before: life("DEPLOYED", ""), After: life("STABLE", "")})
	// A write that moves something else is not a lifecycle change.
	audit.OnStatusChange(ctx, StatusChange{Resource: dep, Before: life("STABLE", ""), After: life("STABLE", "")})
	audit.OnStatusChange(ctx, StatusChange{Resource: dep, Before: life("STABLE", ""), After: life("FAILED", "the job failed")})
	snapshot := Resource{Kind: "FlinkStateSnapshot", Namespace: "ns", Name: "sp"}
	audit.OnStatusChange(ctx, StatusChange{Resource: snapshot, Before: life("IN_PROGRESS", ""), After: life("COMPLETED", "")})
	// No state: nothing to tell.
	audit.OnStatusChange(ctx, StatusChange{Resource: dep, Before: life("STABLE", "")})

	if assert.Len(t, lines, 4) {
		assert.Contains(t, lines[0], `"msg"="Job status changed from RUNNING to FINISHED"`)
		assert.Contains(t, lines[0], `"reason"="JobStatusChanged"`)
		assert.Contains(t, lines[0], `"name"="wordcount"`)
		assert.Contains(t, lines[1], `"from"="DEPLOYED" "to"="STABLE"`)
		assert.Contains(t, lines[2], `"to"="FAILED" "statusError"="the job failed"`)
		assert.Contains(t, lines[3], `"resource"="FlinkStateSnapshot"`)
		assert.Contains(t, lines[3], `"to"="COMPLETED"`)
	}
}
