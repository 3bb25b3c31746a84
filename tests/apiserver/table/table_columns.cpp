// Column definitions of the built-in printers (pkg/printers/internalversion
// AddHandlers). Descriptions are the API field docs the printers reference, taken
// verbatim so Table bodies match the apiserver's byte for byte.
#include "tests/apiserver/table/table_printers.h"

namespace testapi {

const std::string_view kNameDescription =
    "Name must be unique within a namespace. Is required when creating resources, although some resources may "
    "allow a client to request the generation of an appropriate name automatically. Name is primarily intended "
    "for creation idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const std::string_view kCreationTimestampDescription =
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not "
    "guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It "
    "is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More "
    "info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

namespace {

constexpr std::string_view kPodStatus_podIP =
    "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.";
constexpr std::string_view kPodSpec_nodeName =
    "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename";
constexpr std::string_view kPodStatus_nominatedNodeName =
    "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.";
constexpr std::string_view kPodSpec_readinessGates =
    "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates";
constexpr std::string_view kConfigMap_data =
    "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.";
constexpr std::string_view kSecret_type =
    "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types";
constexpr std::string_view kSecret_data =
    "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4";
constexpr std::string_view kServiceSpec_type =
    "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types";
constexpr std::string_view kServiceSpec_clusterIP =
    "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
constexpr std::string_view kServiceSpec_externalIPs =
    "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.";
constexpr std::string_view kServiceSpec_ports =
    "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies";
constexpr std::string_view kServiceSpec_selector =
    "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/";
constexpr std::string_view kEndpoints_subsets =
    "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.";
constexpr std::string_view kNodeSystemInfo_kubeletVersion =
    "Kubelet Version reported by the node.";
constexpr std::string_view kNodeStatus_addresses =
    "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";
constexpr std::string_view kNodeSystemInfo_osImage =
    "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).";
constexpr std::string_view kNodeSystemInfo_kernelVersion =
    "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).";
constexpr std::string_view kNodeSystemInfo_containerRuntimeVersion =
    "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).";
constexpr std::string_view kEvent_lastTimestamp =
    "The time at which the most recent occurrence of this event was recorded.";
constexpr std::string_view kEvent_type =
    "Type of this event (Normal, Warning), new types could be added in the future";
constexpr std::string_view kEvent_reason =
    "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.";
constexpr std::string_view kEvent_involvedObject =
    "The object that this event is about.";
constexpr std::string_view kObjectReference_fieldPath =
    "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.";
constexpr std::string_view kEvent_source =
    "The component reporting this event. Should be a short machine understandable string.";
constexpr std::string_view kEvent_message =
    "A human-readable description of the status of this operation.";
constexpr std::string_view kEvent_firstTimestamp =
    "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)";
constexpr std::string_view kEvent_count =
    "The number of times this event has occurred.";
constexpr std::string_view kDeploymentStatus_updatedReplicas =
    "Total number of non-terminating pods targeted by this deployment that have the desired template spec.";
constexpr std::string_view kDeploymentStatus_availableReplicas =
    "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.";
constexpr std::string_view kDeploymentSpec_selector =
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.";
constexpr std::string_view kReplicaSetSpec_replicas =
    "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset";
constexpr std::string_view kReplicaSetStatus_replicas =
    "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset";
constexpr std::string_view kReplicaSetStatus_readyReplicas =
    "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.";
constexpr std::string_view kReplicaSetSpec_selector =
    "Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

constexpr std::string_view kReplicationControllerSpec_replicas =
    "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller";
constexpr std::string_view kReplicationControllerStatus_replicas =
    "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller";
constexpr std::string_view kReplicationControllerStatus_readyReplicas =
    "The number of ready replicas for this replication controller.";
constexpr std::string_view kReplicationControllerSpec_selector =
    "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
constexpr std::string_view kDaemonSetStatus_desiredNumberScheduled =
    "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";
constexpr std::string_view kDaemonSetStatus_currentNumberScheduled =
    "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/";
constexpr std::string_view kDaemonSetStatus_numberReady =
    "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.";
constexpr std::string_view kDaemonSetStatus_updatedNumberScheduled =
    "The total number of nodes that are running updated daemon pod";
constexpr std::string_view kDaemonSetStatus_numberAvailable =
    "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)";
constexpr std::string_view kPodSpec_nodeSelector =
    "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/";
constexpr std::string_view kDaemonSetSpec_selector =
    "A label query over pods that are managed by the daemon set. Must match in order to be controlled. If empty, defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
constexpr std::string_view kJobStatus_succeeded =
    "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.";
constexpr std::string_view kJobSpec_selector =
    "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";
constexpr std::string_view kServiceAccount_secrets =
    "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret";
constexpr std::string_view kContainersDescription = "Names of each container in the template.";
constexpr std::string_view kImagesDescription = "Images referenced by each container in the template.";

TableColumn col(std::string_view name, std::string_view type, std::string_view description, int priority = 0,
                std::string_view format = "") {
  return TableColumn{std::string(name), std::string(type), std::string(format), std::string(description), priority};
}
TableColumn nameCol() { return col("Name", "string", kNameDescription, 0, "name"); }
TableColumn ageCol() { return col("Age", "string", kCreationTimestampDescription); }

}  // namespace

std::vector<TableColumn> builtinColumns(std::string_view group, std::string_view resource) {
  if (group == "events.k8s.io" && resource == "events") return builtinColumns("", "events");
  if (group.empty()) {
    if (resource == "pods")
      return {nameCol(),
              col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
              col("Status", "string", "The aggregate status of the containers in this pod."),
              col("Restarts", "string",
                  "The number of times the containers in this pod have been restarted and when the last container "
                  "in this pod has restarted."),
              ageCol(),
              col("IP", "string", kPodStatus_podIP, 1),
              col("Node", "string", kPodSpec_nodeName, 1),
              col("Nominated Node", "string", kPodStatus_nominatedNodeName, 1),
              col("Readiness Gates", "string", kPodSpec_readinessGates, 1)};
    if (resource == "configmaps") return {nameCol(), col("Data", "string", kConfigMap_data), ageCol()};
    if (resource == "secrets")
      return {nameCol(), col("Type", "string", kSecret_type), col("Data", "string", kSecret_data), ageCol()};
    if (resource == "services")
      return {nameCol(),
              col("Type", "string", kServiceSpec_type),
              col("Cluster-IP", "string", kServiceSpec_clusterIP),
              col("External-IP", "string", kServiceSpec_externalIPs),
              col("Port(s)", "string", kServiceSpec_ports),
              ageCol(),
              col("Selector", "string", kServiceSpec_selector, 1)};
    if (resource == "endpoints") return {nameCol(), col("Endpoints", "string", kEndpoints_subsets), ageCol()};
    if (resource == "events")  // events.k8s.io shares the core Event printer
      return {col("Last Seen", "string", kEvent_lastTimestamp),
              col("Type", "string", kEvent_type),
              col("Reason", "string", kEvent_reason),
              col("Object", "string", kEvent_involvedObject),
              col("Subobject", "string", kObjectReference_fieldPath, 1),
              col("Source", "string", kEvent_source, 1),
              col("Message", "string", kEvent_message),
              col("First Seen", "string", kEvent_firstTimestamp, 1),
              col("Count", "string", kEvent_count, 1),
              col("Name", "string", kNameDescription, 1, "name")};
    if (resource == "namespaces")
      return {nameCol(), col("Status", "string", "The status of the namespace"), ageCol()};
    if (resource == "nodes")
      return {nameCol(),
              col("Status", "string", "The status of the node"),
              col("Roles", "string", "The roles of the node"),
              ageCol(),
              col("Version", "string", kNodeSystemInfo_kubeletVersion),
              col("Internal-IP", "string", kNodeStatus_addresses, 1),
              col("External-IP", "string", kNodeStatus_addresses, 1),
              col("OS-Image", "string", kNodeSystemInfo_osImage, 1),
              col("Kernel-Version", "string", kNodeSystemInfo_kernelVersion, 1),
              col("Container-Runtime", "string", kNodeSystemInfo_containerRuntimeVersion, 1)};
    if (resource == "replicationcontrollers")
      return {nameCol(),
              col("Desired", "integer", kReplicationControllerSpec_replicas),
              col("Current", "integer", kReplicationControllerStatus_replicas),
              col("Ready", "integer", kReplicationControllerStatus_readyReplicas),
              ageCol(),
              col("Containers", "string", kContainersDescription, 1),
              col("Images", "string", kImagesDescription, 1),
              col("Selector", "string", kReplicationControllerSpec_selector, 1)};
    if (resource == "serviceaccounts")
      return {nameCol(), col("Secrets", "string", kServiceAccount_secrets), ageCol()};
    return {};
  }
  if (group == "apps" && resource == "statefulsets")
    return {nameCol(),
            col("Ready", "string", "Number of the pod with ready state"),
            ageCol(),
            col("Containers", "string", kContainersDescription, 1),
            col("Images", "string", kImagesDescription, 1)};
  if (group == "apps" && resource == "daemonsets")
    return {nameCol(),
            col("Desired", "integer", kDaemonSetStatus_desiredNumberScheduled),
            col("Current", "integer", kDaemonSetStatus_currentNumberScheduled),
            col("Ready", "integer", kDaemonSetStatus_numberReady),
            col("Up-to-date", "integer", kDaemonSetStatus_updatedNumberScheduled),
            col("Available", "integer", kDaemonSetStatus_numberAvailable),
            col("Node Selector", "string", kPodSpec_nodeSelector),
            ageCol(),
            col("Containers", "string", kContainersDescription, 1),
            col("Images", "string", kImagesDescription, 1),
            col("Selector", "string", kDaemonSetSpec_selector, 1)};
  if (group == "batch" && resource == "jobs")
    return {nameCol(),
            col("Status", "string", "Status of the job."),
            col("Completions", "string", kJobStatus_succeeded),
            col("Duration", "string", "Time required to complete the job."),
            ageCol(),
            col("Containers", "string", kContainersDescription, 1),
            col("Images", "string", kImagesDescription, 1),
            col("Selector", "string", kJobSpec_selector, 1)};
  if (group == "apps" && resource == "deployments")
    return {nameCol(),
            col("Ready", "string", "Number of the pod with ready state"),
            col("Up-to-date", "string", kDeploymentStatus_updatedReplicas),
            col("Available", "string", kDeploymentStatus_availableReplicas),
            ageCol(),
            col("Containers", "string", kContainersDescription, 1),
            col("Images", "string", kImagesDescription, 1),
            col("Selector", "string", kDeploymentSpec_selector, 1)};
  if (group == "apps" && resource == "replicasets")
    return {nameCol(),
            col("Desired", "integer", kReplicaSetSpec_replicas),
            col("Current", "integer", kReplicaSetStatus_replicas),
            col("Ready", "integer", kReplicaSetStatus_readyReplicas),
            ageCol(),
            col("Containers", "string", kContainersDescription, 1),
            col("Images", "string", kImagesDescription, 1),
            col("Selector", "string", kReplicaSetSpec_selector, 1)};
  return {};
}

}  // namespace testapi
