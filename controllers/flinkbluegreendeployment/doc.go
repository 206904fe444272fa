// Package flinkbluegreendeployment reconciles FlinkBlueGreenDeployments: observe the two child
// FlinkDeployments, let pkg/bluegreen decide the next action, and carry it out with the one
// handler of that action (actions.go).
package flinkbluegreendeployment
