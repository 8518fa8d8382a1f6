package userdata

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
)

// Options are what every AMI family needs to render a node's user data.
type Options struct {
	// ClusterName is the EKS cluster name.
	ClusterName string
	// ClusterEndpoint is the API server URL (https://...).
	ClusterEndpoint string
	// CABundle is the PEM of the cluster CA. When empty no certificate is rendered and the
	// family's own discovery is left to find it where it can (AL2's bootstrap.sh calls
	// DescribeCluster; for AL2023 and Bottlerocket the user's own settings may supply it).
	CABundle []byte
	// ClusterCIDR is the cluster's service CIDR, for example 10.100.0.0/16 (nodeadm needs it).
	ClusterCIDR string
	// ClusterDNS is the DNS server list to use when neither the EC2NodeClass kubelet
	// configuration nor the user's own settings set one. Optional.
	ClusterDNS []string
	// Kubelet is the kubelet configuration from the EC2NodeClass. Every field set here is
	// rendered and wins over the same setting in spec.userData.
	Kubelet *awsv1.KubeletConfiguration
	// Labels are the node labels the kubelet registers the node with.
	Labels map[string]string
	// Taints are the taints the kubelet registers the node with (the NodePool's taints and
	// startup taints).
	Taints []corev1.Taint
	// MaxPods is the computed max pods for the instance type(s), used when Kubelet.MaxPods is
	// not set and the user's own settings do not set it either. May be nil.
	MaxPods *int32
	// UserData is EC2NodeClass.spec.userData.
	UserData *string
	// InstanceStorePolicy is EC2NodeClass.spec.instanceStorePolicy; RAID0 makes the node
	// assemble its local NVMe disks into one array for ephemeral storage.
	InstanceStorePolicy *awsv1.InstanceStorePolicy
}

// Families lists the AMI families Render accepts, in the order error messages name them.
var Families = []string{awsv1.AMIFamilyAL2023, awsv1.AMIFamilyAL2, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyCustom,
	awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025}

// Render renders the user data for the AMI family (an EC2NodeClass spec.amiFamily value).
// An empty family means AL2023, the default. Any other family is an error naming
// spec.amiFamily and the allowed values.
func Render(family string, o Options) (string, error) {
	switch family {
	case "", awsv1.AMIFamilyAL2023:
		return AL2023(o)
	case awsv1.AMIFamilyAL2:
		return AL2(o)
	case awsv1.AMIFamilyBottlerocket:
		return Bottlerocket(o)
	case awsv1.AMIFamilyCustom:
		return Custom(o)
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return Windows(o)
	default:
		return "", fmt.Errorf("spec.amiFamily %q is not supported for user data: allowed values are %s",
			family, strings.Join(Families, ", "))
	}
}

// Custom returns spec.userData exactly as written ("" when unset): with amiFamily Custom the
// image bootstraps itself (a kOps nodeup script, for example) and Karpenter adds nothing.
func Custom(o Options) (string, error) {
	if o.UserData == nil {
		return "", nil
	}
	return *o.UserData, nil
}

// userDataErr formats an error about spec.userData.
func userDataErr(format string, args ...any) error {
	return fmt.Errorf("spec.userData: "+format, args...)
}

// kubelet returns the EC2NodeClass kubelet configuration, never nil.
func (o Options) kubelet() awsv1.KubeletConfiguration {
	if o.Kubelet == nil {
		return awsv1.KubeletConfiguration{}
	}
	return *o.Kubelet
}

// maxPods resolves max pods: the EC2NodeClass value (explicit=true) or the computed default.
func (o Options) maxPods() (v *int32, explicit bool) {
	if k := o.kubelet(); k.MaxPods != nil {
		return k.MaxPods, true
	}
	return o.MaxPods, false
}

// clusterDNS resolves the DNS servers: the EC2NodeClass value (explicit=true) or the default.
func (o Options) clusterDNS() (v []string, explicit bool) {
	if k := o.kubelet(); len(k.ClusterDNS) > 0 {
		return k.ClusterDNS, true
	}
	return o.ClusterDNS, false
}

// userData returns spec.userData, "" when unset.
func (o Options) userData() string {
	if o.UserData == nil {
		return ""
	}
	return *o.UserData
}

// raid0 reports whether the instance store policy asks for a RAID0 array.
func (o Options) raid0() bool {
	return o.InstanceStorePolicy != nil && *o.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// joinMap renders m as k<sep>v pairs joined by commas, sorted by key.
func joinMap(m map[string]string, sep string) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+sep+m[k])
	}
	return strings.Join(parts, ",")
}

// durations renders a map of durations as Go duration strings ("1m30s"), which the kubelet,
// nodeadm and Bottlerocket all accept.
func durations(m map[string]metav1.Duration) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v.Duration.String()
	}
	return out
}

// nodeLabels renders the labels as the kubelet's --node-labels value (k=v,..., sorted).
func nodeLabels(labels map[string]string) string {
	return joinMap(labels, "=")
}

// taintString renders a taint the way the kubelet's --register-with-taints takes it.
func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return fmt.Sprintf("%s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect)
}

// base64String is the standard base64 encoding of b.
func base64String(b []byte) string {
	return base64.StdEncoding.EncodeToString(b)
}
