// Package jobs is a Flink job's lifecycle, shared by the FlinkDeployment and FlinkSessionJob
// reconcilers: the upgrade plan (upgradepolicy.go) and the stop that carries it out
// (jobstop.go), the phase runner (phases.go), snapshot resources and legacy snapshots with
// their history, the autoscaler's wiring, and upstream's option warnings and events.
package jobs
