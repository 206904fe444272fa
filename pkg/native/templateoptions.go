package native

import (
	flinkv1beta1 "github.com/flink-operator/flink-operator/api/v1beta1"
	"github.com/flink-operator/flink-operator/pkg/flinkconf"
	"github.com/flink-operator/flink-operator/pkg/options"
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
	if o.startupProbe, err = flinkBool(conf, options.JMStartupProbe); err != nil {
		return o, err
	}
	if o.mergeByName, err = flinkBool(conf, options.PodTemplateMergeArraysByName); err != nil {
		return o, err
	}
	return o, nil
}

// flinkBool reads a boolean option with the registry's parser; its default when unset.
func flinkBool(conf flinkconf.Config, o options.BoolOption) (bool, error) {
	v, set, err := o.Lookup(conf)
	if err != nil || !set {
		return o.Get(nil), err
	}
	return v, nil
}
