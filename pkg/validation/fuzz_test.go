package validation

import (
	"context"
	"encoding/json"
	"testing"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
)

// FuzzValidate feeds arbitrary JSON, seeded with the upstream resources, to every validator:
// whatever the API server lets through, validation must answer, never panic.
// Run longer with: go test ./pkg/validation -run '^$' -fuzz FuzzValidate -fuzztime 60s
func FuzzValidate(f *testing.F) {
	deps, jobs, snaps := upstreamResources(f)
	for _, d := range deps {
		raw, _ := json.Marshal(d)
		f.Add(raw, raw)
	}
	for _, j := range jobs {
		raw, _ := json.Marshal(j)
		f.Add(raw, raw)
	}
	for _, s := range snaps {
		raw, _ := json.Marshal(s)
		f.Add(raw, []byte(`{}`))
	}
	f.Add([]byte(`{"spec":{"flinkConfiguration":{"a":{"b":[1,{"c":2}]}},"jobManager":{"resources":{"requests":{"memory":"0"}}}}}`), []byte(`{"status":{"reconciliationStatus":{"lastReconciledSpec":"{\"spec\":{\"job\":null}}"}}}`))

	v := &Validator{Resolver: fakeResolver{}}
	f.Fuzz(func(t *testing.T, newJSON, oldJSON []byte) {
		var dep, oldDep flinkv1beta1.FlinkDeployment
		if json.Unmarshal(newJSON, &dep) == nil {
			_ = v.ValidateDeployment(&dep, nil)
			if json.Unmarshal(oldJSON, &oldDep) == nil {
				_ = v.ValidateDeployment(&dep, &oldDep)
			}
		}
		var job, oldJob flinkv1beta1.FlinkSessionJob
		if json.Unmarshal(newJSON, &job) == nil {
			var session *flinkv1beta1.FlinkDeployment
			if json.Unmarshal(oldJSON, &oldDep) == nil {
				session = &oldDep
			}
			_ = v.ValidateSessionJob(context.Background(), &job, nil, session)
			if json.Unmarshal(oldJSON, &oldJob) == nil {
				_ = v.ValidateSessionJob(context.Background(), &job, &oldJob, nil)
			}
		}
		var snap flinkv1beta1.FlinkStateSnapshot
		if json.Unmarshal(newJSON, &snap) == nil {
			_ = v.ValidateSnapshot(&snap, func(flinkv1beta1.JobKind, string) (bool, error) { return false, nil })
		}
	})
}
