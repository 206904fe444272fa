package native

import "github.com/flink-operator/flink-operator/pkg/flinkconf"

// The configuration model moved to pkg/flinkconf. These names keep its callers compiling until
// they are renamed (the final commit of this change deletes this file).

type (
	Config          = flinkconf.Config
	Defaults        = flinkconf.Defaults
	VersionDefaults = flinkconf.VersionDefaults
	BuildOptions    = flinkconf.BuildOptions
	PortKey         = flinkconf.PortKey
)

const (
	ProgramArgsKey     = flinkconf.ProgramArgsKey
	DefaultRESTPort    = flinkconf.DefaultRESTPort
	DefaultRPCPort     = flinkconf.DefaultRPCPort
	DefaultBlobPort    = flinkconf.DefaultBlobPort
	DefaultTMRPCPort   = flinkconf.DefaultTMRPCPort
	PodTemplateDir     = flinkconf.PodTemplateDir
	TaskManagerPodFile = flinkconf.TaskManagerPodFile
)

var (
	PortKeys                   = flinkconf.PortKeys
	DefaultsFromOperatorConfig = flinkconf.DefaultsFromOperatorConfig
	Ports                      = flinkconf.Ports
	UserConfig                 = flinkconf.UserConfig
	WithOptions                = flinkconf.WithOptions
	EffectiveConfig            = flinkconf.EffectiveConfig
	UserJobID                  = flinkconf.UserJobID
	TaskSlots                  = flinkconf.TaskSlots
	TaskManagerReplicas        = flinkconf.TaskManagerReplicas
	ParseFlinkDuration         = flinkconf.ParseFlinkDuration
	MemoryBytes                = flinkconf.MemoryBytes
	FlinkMemory                = flinkconf.FlinkMemory
	ProgramArgs                = flinkconf.ProgramArgs
	RESTServiceName            = flinkconf.RESTServiceName
	InternalServiceName        = flinkconf.InternalServiceName
	ConfigFileName             = flinkconf.ConfigFileName
	RenderConfigFile           = flinkconf.RenderConfigFile
	CheckYAMLEntry             = flinkconf.CheckYAMLEntry
	CheckConfigEntry           = flinkconf.CheckConfigEntry
	TrimKey                    = flinkconf.TrimKey
	CheckLegacyEntry           = flinkconf.CheckLegacyEntry
)
