// Package reconciler is what every reconciler of the operator runs on: ReconcilerOptions and
// the one preamble (options.go), the job-resource skeleton (jobresource.go: recorded spec and
// nonces, write-ahead status patch, finish, finalizer), intervals and deadline, rate limits,
// the priority queue, own-write tracking, validator and listener hooks, status patches.
package reconciler
