// Package controllers holds the reconcilers of FlinkDeployment, FlinkSessionJob,
// FlinkStateSnapshot and FlinkBlueGreenDeployment, wired in one place (SetupReconcilers). Each runs the same phases every time: observe (what exists: the
// JobManager Deployment, the job through Flink's REST API), validate (pkg/validation, the
// webhook's rules), reconcile (decide from the observed state and the status, then act). The
// status is the write-ahead log: what the operator is about to do (the target spec, job id,
// savepoint trigger id) is written before it is done, so a restarted operator resumes from it.
package controllers
