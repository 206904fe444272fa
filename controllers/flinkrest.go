package controllers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/flink-operator/flink-operator/pkg/flink"
	"github.com/flink-operator/flink-operator/pkg/native"
)

// DefaultRESTURLTemplate reaches a JobManager through its REST Service, from inside the cluster.
const DefaultRESTURLTemplate = "http://{{name}}-rest.{{namespace}}:{{port}}"

// FlinkClients makes the REST clients of clusters. URLTemplate says where a cluster's REST
// endpoint is: {{name}}, {{namespace}} and {{port}} are replaced. An operator running outside
// the cluster (on a laptop, in a test) points it at a port-forward or proxy.
type FlinkClients struct {
	URLTemplate string
	Timeout     time.Duration
	OnCall      func(flink.Call)
}

// For returns the client of a cluster.
func (f *FlinkClients) For(namespace, name string, conf native.Config) (*flink.Client, error) {
	tmpl := f.URLTemplate
	if tmpl == "" {
		tmpl = DefaultRESTURLTemplate
	}
	port, err := conf.Int("rest.port", native.DefaultRESTPort)
	if err != nil {
		return nil, err
	}
	url := strings.NewReplacer("{{name}}", name, "{{namespace}}", namespace, "{{port}}", strconv.Itoa(port)).Replace(tmpl)
	c, err := flink.New(flink.Options{URL: url, Timeout: f.Timeout, OnCall: f.OnCall})
	if err != nil {
		return nil, fmt.Errorf("REST client of %s/%s: %w", namespace, name, err)
	}
	return c, nil
}
