// Package native builds the Kubernetes objects that run a Flink cluster described by a
// FlinkDeployment, in native mode (the JobManager creates TaskManager pods itself) and in
// standalone mode (the operator creates a TaskManager Deployment), and applies and deletes them.
// It renders them from the Flink configuration pkg/flinkconf computes, and never talks to Flink.
//
// Names, labels and config keys are the ones the upstream operator (through Flink's own
// native Kubernetes integration) uses, so dashboards, scripts and HA metadata of existing
// clusters keep working.
package native

// Labels on every object of a cluster.
const (
	LabelApp       = "app"
	LabelComponent = "component"
	LabelType      = "type"

	ComponentJobManager  = "jobmanager"
	ComponentTaskManager = "taskmanager"
	ComponentIngress     = "ingress"
	ComponentAutoscaler  = "autoscaler"

	TypeNative     = "flink-native-kubernetes"
	TypeStandalone = "flink-standalone-kubernetes"

	// LabelConfigMapType marks the ConfigMaps Flink's Kubernetes HA services write.
	LabelConfigMapType = "configmap-type"
	ConfigMapTypeHA    = "high-availability"
)

// AnnotationGeneration on the JobManager Deployment records the FlinkDeployment generation it
// was deployed for; the reconciler uses it to tell whether an upgrade already went through.
const AnnotationGeneration = "flinkdeployment.flink.apache.org/generation"

// AnnotationDeployAttempt stamps a JobManager Deployment with the deployment attempt it belongs
// to (BuildOptions.Attempt). The reconciler's status records whether that attempt was applied
// whole. AnnotationDeployComplete is what earlier versions wrote, with a second apply of the
// Deployment, once every object was applied; it is only read now, so that their clusters are
// not applied again.
const (
	AnnotationDeployAttempt  = "flinkdeployment.flink.apache.org/deploy-attempt"
	AnnotationDeployComplete = "flinkdeployment.flink.apache.org/deploy-complete"
)

// FieldManager is the server-side-apply field manager of the operator.
const FieldManager = "flink-operator"

// MainContainer is the name of the Flink container; pod templates address it by this name.
const MainContainer = "flink-main-container"

// Ports and their names.
const (
	PortNameREST  = "rest"
	PortNameRPC   = "jobmanager-rpc"
	PortNameBlob  = "blobserver"
	PortNameTMRPC = "taskmanager-rpc"
)

// Paths inside Flink containers.
const (
	FlinkConfDir      = "/opt/flink/conf"
	configVolume      = "flink-config-volume"
	podTemplateVolume = "pod-template-volume"
)

// JobManagerDeploymentName is the JobManager Deployment of a cluster.
func JobManagerDeploymentName(cluster string) string { return cluster }

// TaskManagerDeploymentName is the TaskManager Deployment of a standalone cluster.
func TaskManagerDeploymentName(cluster string) string { return cluster + "-taskmanager" }

// ConfigMapName holds the Flink configuration and logging files.
func ConfigMapName(cluster string) string { return "flink-config-" + cluster }

// PodTemplateConfigMapName holds the TaskManager pod template of a native cluster.
func PodTemplateConfigMapName(cluster string) string { return "pod-template-" + cluster }

// IngressName is the Ingress of a cluster.
func IngressName(cluster string) string { return cluster }

// SelectorLabels select the pods of one component of a cluster.
func SelectorLabels(cluster, component, clusterType string) map[string]string {
	return map[string]string{LabelApp: cluster, LabelComponent: component, LabelType: clusterType}
}
