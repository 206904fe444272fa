// Package flinkstatesnapshot reconciles FlinkStateSnapshots: the savepoint or checkpoint is
// triggered with its trigger id written ahead, followed until Flink finishes it, retried with
// back-off, and disposed of on deletion; the phases and their state machine are in phases.go.
package flinkstatesnapshot
