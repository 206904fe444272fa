// Package flinkdeployment reconciles FlinkDeployments: observe the JobManager Deployment and the
// job (observe.go), validate, then the phases of phases.go in order (first deployment, rollback,
// recovery, snapshots, the spec change and its upgrade), then the status (controller.go).
package flinkdeployment
