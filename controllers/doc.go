// Package controllers holds the reconcilers of FlinkDeployment, FlinkSessionJob and
// FlinkStateSnapshot. Each runs observe → validate → reconcile over the clients in pkg/.
package controllers
