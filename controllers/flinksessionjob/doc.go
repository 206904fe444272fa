// Package flinksessionjob reconciles FlinkSessionJobs on their session cluster: the session's
// readiness, the jar's submission, the phases of phases.go in order and the spec-change plan
// of upgrade.go, on the job lifecycle shared with FlinkDeployments (controllers/jobs).
package flinksessionjob
