package flinkconf

// The addresses, ports and paths the configuration points Flink at. The Kubernetes objects
// pkg/native renders (Services, container ports, volumes) use the same ones, so the two cannot
// disagree.

// Default ports of a cluster, for a configuration that sets none.
const (
	DefaultRESTPort  = 8081
	DefaultRPCPort   = 6123
	DefaultBlobPort  = 6124
	DefaultTMRPCPort = 6122
)

// Where the TaskManager pod template of a native cluster is mounted in the JobManager
// (kubernetes.pod-template-file.taskmanager).
const (
	PodTemplateDir     = "/opt/flink/pod-template"
	TaskManagerPodFile = "taskmanager-pod-template.yaml"
)

// RESTServiceName is the Service in front of the JobManager's REST endpoint (rest.address).
func RESTServiceName(cluster string) string { return cluster + "-rest" }

// InternalServiceName is the headless Service TaskManagers reach the JobManager by without HA
// (jobmanager.rpc.address).
func InternalServiceName(cluster string) string { return cluster }
