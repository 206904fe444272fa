package native

import (
	"fmt"
	"strings"

	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
)

// Upstream's operator options that shape the pods (KubernetesOperatorConfigOptions), read from
// the operator's configuration and the resource's flinkConfiguration.
const (
	// OptionStartupProbe (default true) gives the JobManager upstream's startup probe.
	OptionStartupProbe = "kubernetes.operator.jm-deployment.startup.probe.enabled"
	// OptionMergeArraysByName (default false) merges the pod templates' arrays by name
	// instead of by index.
	OptionMergeArraysByName = "kubernetes.operator.pod-template.merge-arrays-by-name"
)

// templateOptions are the settings Build takes from the operator options.
type templateOptions struct {
	startupProbe bool
	mergeByName  bool
}

func templateOptionsOf(dep *flinkv1beta1.FlinkDeployment, defaults flinkconf.Defaults) (templateOptions, error) {
	conf, err := flinkconf.UserConfig(dep, defaults)
	if err != nil {
		return templateOptions{}, err
	}
	var o templateOptions
	if o.startupProbe, err = flinkBool(conf, OptionStartupProbe, true); err != nil {
		return o, err
	}
	if o.mergeByName, err = flinkBool(conf, OptionMergeArraysByName, false); err != nil {
		return o, err
	}
	return o, nil
}

// flinkBool reads a boolean as Flink does: true or false in any case; def when unset.
func flinkBool(conf flinkconf.Config, key string, def bool) (bool, error) {
	v := strings.TrimSpace(conf[key])
	switch {
	case v == "":
		return def, nil
	case strings.EqualFold(v, "true"):
		return true, nil
	case strings.EqualFold(v, "false"):
		return false, nil
	}
	return false, fmt.Errorf("flinkConfiguration %s: %q is not a boolean: want true or false", key, v)
}
