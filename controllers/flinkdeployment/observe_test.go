package flinkdeployment

import (
	"testing"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/stretchr/testify/assert"
)

// TestJobManagerStatus is the JobManager deployment state machine, one row per transition.
func TestJobManagerStatus(t *testing.T) {
	tests := []struct {
		name string
		obs  jobManagerObservation
		want flinkv1beta1.JobManagerDeploymentStatus
	}{
		{"no Deployment", jobManagerObservation{}, flinkv1beta1.JobManagerMissing},
		{"being deleted", jobManagerObservation{Exists: true, Deleting: true, Available: true, RESTAnswers: true}, flinkv1beta1.JobManagerDeploying},
		{"starting", jobManagerObservation{Exists: true}, flinkv1beta1.JobManagerDeploying},
		{"crash looping", jobManagerObservation{Exists: true, FailedReason: "CrashLoopBackOff"}, flinkv1beta1.JobManagerError},
		{"image not pullable", jobManagerObservation{Exists: true, FailedReason: "ImagePullBackOff"}, flinkv1beta1.JobManagerError},
		{"available, REST not yet", jobManagerObservation{Exists: true, Available: true}, flinkv1beta1.JobManagerDeployedNotReady},
		{"available, REST answers", jobManagerObservation{Exists: true, Available: true, RESTAnswers: true}, flinkv1beta1.JobManagerReady},
		{"an old failing pod next to an available one", jobManagerObservation{Exists: true, Available: true, FailedReason: "CrashLoopBackOff", RESTAnswers: true}, flinkv1beta1.JobManagerReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, jobManagerStatus(tt.obs))
		})
	}
}
