package controllers

import "github.com/flink-operator/flink-operator/pkg/flink/clients"

// The REST client factory moved to pkg/flink/clients. These names keep its callers compiling
// until they are renamed (the final commit of this change deletes this file).

type (
	FlinkClients     = clients.Factory
	RESTServiceError = clients.RESTServiceError
)

const (
	DefaultRESTURLTemplate   = clients.DefaultRESTURLTemplate
	RESTAddressService       = clients.RESTAddressService
	RESTAddressPodIP         = clients.RESTAddressPodIP
	ReasonRESTServiceRefused = clients.ReasonRESTServiceRefused
)

var IsRESTServiceRefused = clients.IsRESTServiceRefused
