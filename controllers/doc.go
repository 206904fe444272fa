// Package controllers wires the operator's four reconcilers in one place (SetupReconcilers),
// each from the package of its kind: flinkdeployment, flinksessionjob, flinkstatesnapshot and
// flinkbluegreendeployment. They share controllers/jobs (a Flink job's lifecycle: the upgrade
// plan and its stop, snapshots, autoscaling, the phase runner) and controllers/reconciler (what
// every reconciler runs on: options, the preamble, the job-resource skeleton, pacing, own-write
// tracking, extension hooks); no kind imports another. Every reconcile reads the same way:
// observe, validate, an ordered list of phases, status. The status is the write-ahead log: what
// the operator is about to do (the target spec, job id, savepoint trigger id) is written before
// it is done, so a restarted operator resumes from it. This package's tests are the envtest
// scenarios that run the kinds together against a real API server.
package controllers
