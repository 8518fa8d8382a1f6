package v1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeletConfiguration is an EC2NodeClass's kubelet configuration. As in Karpenter v1.15, any
// field of the upstream KubeletConfiguration (kubelet.config.k8s.io/v1beta1) may be set. The
// fields Karpenter reads for scheduling and bootstrap are typed here; every other field (and
// a typed field whose value does not decode into its type, such as a CEL expression in
// maxPods) is kept in Other as written, so it round-trips, is hashed, and reaches the nodes
// that take it. The API server checks none of it: Validate does what Karpenter's controller
// does.
type KubeletConfiguration struct {
	// ClusterDNS is the list of DNS server IPs the kubelet gives pods.
	// +optional
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// MaxPods caps the pods per node, overriding the ENI-based default. Written as a string it
	// is a CEL expression evaluated per instance type (the AWS provider's NodeClassCEL feature
	// gate), kept in Other: see MaxPodsExpression.
	// +optional
	MaxPods *int32 `json:"maxPods,omitempty"`
	// PodsPerCore caps pods per vCPU; the smaller of it and MaxPods applies.
	// +optional
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`
	// SystemReserved is held back for OS daemons (cpu, memory, ephemeral-storage, pid). A value
	// that is not a quantity is a CEL expression evaluated per instance type (the NodeClassCEL
	// gate): cpu in millicores, memory in MiB, ephemeral-storage in GiB, pid a count.
	// +optional
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	// KubeReserved is held back for Kubernetes daemons (cpu, memory, ephemeral-storage, pid);
	// when unset it is computed from the instance's cores and pods. A value may be a CEL
	// expression, as in SystemReserved.
	// +optional
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`
	// EvictionHard thresholds, such as memory.available: 100Mi or nodefs.available: 10%.
	// +optional
	EvictionHard map[string]string `json:"evictionHard,omitempty"`
	// EvictionSoft thresholds; each needs a grace period in EvictionSoftGracePeriod.
	// +optional
	EvictionSoft map[string]string `json:"evictionSoft,omitempty"`
	// EvictionSoftGracePeriod is how long each soft threshold must hold before eviction.
	// +optional
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	// EvictionMaxPodGracePeriod is the longest grace period (seconds) given to pods evicted on a
	// soft threshold.
	// +optional
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`
	// ImageGCHighThresholdPercent is the disk usage that always triggers image garbage collection.
	// +optional
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is the disk usage image garbage collection frees down to.
	// +optional
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// CPUCFSQuota enables CPU CFS quota enforcement for containers with CPU limits.
	// +optional
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`
	// Other holds every other field set, by its JSON name, as written: kubelet configuration
	// fields not typed above (containerLogMaxSize, …), and typed fields whose value did not
	// decode (maxPods: "pods * 2"). It marshals back into the same object.
	Other map[string]apiextensionsv1.JSON `json:"-"`
}

// kubeletTyped is KubeletConfiguration without its JSON methods.
type kubeletTyped KubeletConfiguration

// managedKubeletFields are the JSON names of the typed fields of KubeletConfiguration: the
// fields Karpenter reads and maps to every AMI family's bootstrap.
var managedKubeletFields = []string{
	"clusterDNS", "maxPods", "podsPerCore", "systemReserved", "kubeReserved", "evictionHard", "evictionSoft",
	"evictionSoftGracePeriod", "evictionMaxPodGracePeriod", "imageGCHighThresholdPercent",
	"imageGCLowThresholdPercent", "cpuCFSQuota",
}

// UnmarshalJSON reads any JSON object: each typed field whose value decodes into its type is
// set, and every other field is kept in Other. Names match exactly (maxPods, not MaxPods), as
// the API server's decoding does.
func (k *KubeletConfiguration) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("kubelet configuration: %w", err)
	}
	*k = KubeletConfiguration{}
	typed := map[string]json.RawMessage{}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		raw := fields[name]
		if slices.Contains(managedKubeletFields, name) {
			one, _ := json.Marshal(map[string]json.RawMessage{name: raw})
			if json.Unmarshal(one, &kubeletTyped{}) == nil {
				typed[name] = raw
				continue
			}
		}
		if k.Other == nil {
			k.Other = map[string]apiextensionsv1.JSON{}
		}
		k.Other[name] = apiextensionsv1.JSON{Raw: slices.Clone(raw)}
	}
	all, err := json.Marshal(typed)
	if err != nil {
		return fmt.Errorf("kubelet configuration: %w", err)
	}
	return json.Unmarshal(all, (*kubeletTyped)(k))
}

// MarshalJSON writes the typed fields and Other as one object. Without Other it is the typed
// fields alone, in their order, as before Other existed (NodeClass hashes stay the same).
func (k KubeletConfiguration) MarshalJSON() ([]byte, error) {
	typed, err := json.Marshal(kubeletTyped(k))
	if err != nil || len(k.Other) == 0 {
		return typed, err
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(typed, &fields); err != nil {
		return nil, err
	}
	for name, v := range k.Other {
		if _, set := fields[name]; !set {
			fields[name] = v.Raw
		}
	}
	return json.Marshal(fields) // keys sorted
}

// fields are the configuration's fields by JSON name, as written.
func (k *KubeletConfiguration) fields() map[string]json.RawMessage {
	fields := map[string]json.RawMessage{}
	if k == nil {
		return fields
	}
	data, err := json.Marshal(k)
	if err == nil {
		err = json.Unmarshal(data, &fields)
	}
	if err != nil { // typed fields and raw JSON always marshal
		panic(fmt.Sprintf("kubelet configuration: %v", err))
	}
	return fields
}

// Unmanaged are the names of the fields set that Karpenter does not read itself (those in
// Other but for typed ones whose value did not decode), sorted. Only AL2023 nodes take them.
func (k *KubeletConfiguration) Unmanaged() []string {
	if k == nil {
		return nil
	}
	var out []string
	for name := range k.Other {
		if !slices.Contains(managedKubeletFields, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Expressions are the fields that hold a CEL expression instead of a value, as Karpenter's
// NodeClassCEL gate reads them: a string maxPods, and a kubeReserved or systemReserved value
// that is not a quantity. Each is named by its path (spec.kubelet.maxPods,
// spec.kubelet.kubeReserved[cpu]), sorted.
func (k *KubeletConfiguration) Expressions() []string {
	var out []string
	fields := k.fields()
	if raw, ok := fields["maxPods"]; ok && isJSONString(raw) {
		out = append(out, "spec.kubelet.maxPods")
	}
	for _, field := range []string{"kubeReserved", "systemReserved"} {
		reserved, _ := stringMap(fields, field)
		for _, key := range slices.Sorted(maps.Keys(reserved)) {
			if _, err := resource.ParseQuantity(reserved[key]); err != nil {
				out = append(out, fmt.Sprintf("spec.kubelet.%s[%s]", field, key))
			}
		}
	}
	return out
}

// MaxPodsExpression returns maxPods when it is written as a string, a CEL expression (the
// NodeClassCEL gate), and false when it is unset or a number.
func (k *KubeletConfiguration) MaxPodsExpression() (string, bool) {
	if k == nil {
		return "", false
	}
	raw, ok := k.Other["maxPods"]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw.Raw, &s) != nil {
		return "", false
	}
	return s, true
}

// KubeletError is one reason a kubelet configuration is refused: the field, as a path such as
// spec.kubelet.evictionHard[memory.free], and what is wrong with it.
//
// +kubebuilder:object:generate=false
type KubeletError struct {
	// Field is the path of the refused field.
	Field string
	// Detail says what is wrong with it.
	Detail string
}

// Error implements error as "<field>: <detail>".
func (e *KubeletError) Error() string { return e.Field + ": " + e.Detail }

// kubeletErrorf is a *KubeletError on field.
func kubeletErrorf(field, format string, args ...any) error {
	return &KubeletError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// evictionSignals are the kubelet eviction signals that may key an eviction map.
var evictionSignals = []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}

// reservedResources are the resources the kubelet can reserve.
var reservedResources = []string{"cpu", "memory", "ephemeral-storage", "pid"}

// karpenterOwnedKubeletFields are the fields Karpenter sets itself, with why: a value set here
// would be overwritten at bootstrap.
var karpenterOwnedKubeletFields = map[string]string{
	"registerWithTaints": "Karpenter sets it from the NodeClaim's taints so the node registers unschedulable until it's ready",
}

// Validate checks the configuration as Karpenter's AWS provider v1.15 does
// (ValidateKubeletConfig), since the API server accepts any object: every field must be a
// field of the upstream KubeletConfiguration with a value of its type (maxPods may be a
// string, a CEL expression, whose use Expressions reports); fields Karpenter sets itself are
// refused; eviction maps are keyed by eviction signals and hold a percentage or a non-negative
// quantity (evictionSoftGracePeriod a non-negative duration), and evictionSoft and
// evictionSoftGracePeriod name the same signals; kubeReserved and systemReserved are keyed by
// cpu, memory, ephemeral-storage and pid and are not negative; percentages are 0 to 100,
// counts not negative, and imageGCHighThresholdPercent is above imageGCLowThresholdPercent.
// Each error names its field. The shape of the upstream configuration is that of k8s.io/kubelet
// at the version this project builds with (upstreamKubeletVersion).
func (k *KubeletConfiguration) Validate() []error {
	fields := k.fields()
	if len(fields) == 0 {
		return nil
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if name == "maxPods" && isJSONString(fields[name]) {
			continue // a CEL expression: only its shape matters here
		}
		errs = append(errs, upstreamKubeletConfiguration.fields[name].check("spec.kubelet."+name, fields[name])...)
	}
	errorf := func(field, format string, args ...any) { errs = append(errs, kubeletErrorf(field, format, args...)) }
	for _, field := range slices.Sorted(maps.Keys(karpenterOwnedKubeletFields)) {
		if _, ok := fields[field]; ok {
			errorf("spec.kubelet."+field, "can't be set, %s", karpenterOwnedKubeletFields[field])
		}
	}
	for _, field := range []string{"evictionHard", "evictionSoft", "evictionSoftGracePeriod", "evictionMinimumReclaim"} {
		signals, _ := stringMap(fields, field)
		for _, key := range slices.Sorted(maps.Keys(signals)) {
			if !slices.Contains(evictionSignals, key) {
				errorf("spec.kubelet."+field, "%q isn't a valid eviction signal, must be one of %s", key, strings.Join(evictionSignals, ", "))
			}
			value := signals[key]
			if field == "evictionSoftGracePeriod" {
				if d, err := time.ParseDuration(value); err != nil {
					errorf(fmt.Sprintf("spec.kubelet.%s[%s]", field, key), "%q must be a duration", value)
				} else if d < 0 {
					errorf(fmt.Sprintf("spec.kubelet.%s[%s]", field, key), "%q can't be a negative duration", value)
				}
				continue
			}
			if pct, ok := strings.CutSuffix(value, "%"); ok {
				if v, err := strconv.ParseFloat(pct, 64); err != nil || v < 0 || v > 100 {
					errorf(fmt.Sprintf("spec.kubelet.%s[%s]", field, key), "%q must be a percentage or a resource quantity", value)
				}
				continue
			}
			if q, err := resource.ParseQuantity(value); err != nil {
				errorf(fmt.Sprintf("spec.kubelet.%s[%s]", field, key), "%q must be a percentage or a resource quantity", value)
			} else if q.Sign() < 0 {
				errorf(fmt.Sprintf("spec.kubelet.%s[%s]", field, key), "%q can't be a negative resource quantity", value)
			}
		}
	}
	soft, _ := stringMap(fields, "evictionSoft")
	grace, _ := stringMap(fields, "evictionSoftGracePeriod")
	for _, signal := range slices.Sorted(maps.Keys(soft)) {
		if _, ok := grace[signal]; !ok {
			errorf(fmt.Sprintf("spec.kubelet.evictionSoft[%s]", signal), "has no matching evictionSoftGracePeriod")
		}
	}
	for _, signal := range slices.Sorted(maps.Keys(grace)) {
		if _, ok := soft[signal]; !ok {
			errorf(fmt.Sprintf("spec.kubelet.evictionSoftGracePeriod[%s]", signal), "has no matching evictionSoft")
		}
	}
	for _, field := range []string{"kubeReserved", "systemReserved"} {
		reserved, _ := stringMap(fields, field)
		for _, key := range slices.Sorted(maps.Keys(reserved)) {
			if !slices.Contains(reservedResources, key) {
				errorf("spec.kubelet."+field, "%q isn't a reservable resource, must be one of %s", key, strings.Join(reservedResources, ", "))
			}
			if strings.HasPrefix(reserved[key], "-") {
				errorf(fmt.Sprintf("spec.kubelet.%s[%s]", field, key), "%q can't be a negative resource quantity", reserved[key])
			}
		}
	}
	for _, field := range []string{"imageGCHighThresholdPercent", "imageGCLowThresholdPercent"} {
		if v, ok := integer(fields, field); ok && (v < 0 || v > 100) {
			errorf("spec.kubelet."+field, "%d must be between 0 and 100", v)
		}
	}
	for _, field := range []string{"podsPerCore", "evictionMaxPodGracePeriod", "maxPods"} {
		if v, ok := integer(fields, field); ok && v < 0 {
			errorf("spec.kubelet."+field, "%d can't be negative", v)
		}
	}
	high, highOK := integer(fields, "imageGCHighThresholdPercent")
	low, lowOK := integer(fields, "imageGCLowThresholdPercent")
	if highOK && lowOK && high <= low {
		errorf("spec.kubelet", "imageGCHighThresholdPercent (%d) must be greater than imageGCLowThresholdPercent (%d)", high, low)
	}
	return errs
}

// stringMap reads a field holding a map of strings; false when it is absent or not one (the
// shape check reports the latter).
func stringMap(fields map[string]json.RawMessage, field string) (map[string]string, bool) {
	raw, ok := fields[field]
	if !ok {
		return nil, false
	}
	var out map[string]string
	if json.Unmarshal(raw, &out) != nil {
		return nil, false
	}
	return out, true
}

// integer reads a field holding an integer; false when it is absent or not one.
func integer(fields map[string]json.RawMessage, field string) (int64, bool) {
	raw, ok := fields[field]
	if !ok {
		return 0, false
	}
	var out int64
	if json.Unmarshal(raw, &out) != nil {
		return 0, false
	}
	return out, true
}

// isJSONString reports whether raw is a JSON string.
func isJSONString(raw json.RawMessage) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil
}

// kubeletKind is the JSON shape of a kubelet configuration value.
type kubeletKind int

const (
	kubeletAny      kubeletKind = iota // anything (a type that decodes itself)
	kubeletString                      // a string
	kubeletBool                        // true or false
	kubeletInt                         // an integer of bits bits
	kubeletUint                        // a non-negative integer of bits bits
	kubeletFloat                       // a number
	kubeletDuration                    // a Go duration string ("1m30s")
	kubeletTime                        // an RFC 3339 time string
	kubeletQuantity                    // a resource quantity, string or number
	kubeletArray                       // a list of elem
	kubeletMap                         // an object of elem values, any keys
	kubeletObject                      // an object of the fields named
)

// kubeletValue is the shape of one value of the upstream kubelet configuration.
type kubeletValue struct {
	kind   kubeletKind
	bits   int
	elem   *kubeletValue
	fields map[string]*kubeletValue
}

// check reports where raw, at path, is not of shape v, as decoding it strictly into the
// upstream type would: unknown fields and values of another type. A nil v is a field the
// upstream type does not have. null is taken anywhere, as decoding takes it.
func (v *kubeletValue) check(path string, raw json.RawMessage) []error {
	if v == nil {
		return []error{kubeletErrorf(path, "unknown field: not a field of the kubelet configuration (kubelet.config.k8s.io/v1beta1 KubeletConfiguration, k8s.io/kubelet %s)", upstreamKubeletVersion)}
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || v.kind == kubeletAny {
		return nil
	}
	wrong := func(want string) []error {
		return []error{kubeletErrorf(path, "%s is not %s", bytes.TrimSpace(raw), want)}
	}
	switch v.kind {
	case kubeletString, kubeletDuration, kubeletTime:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return wrong("a string")
		}
		if _, err := time.ParseDuration(s); v.kind == kubeletDuration && err != nil {
			return wrong(`a duration ("1m30s")`)
		}
		if _, err := time.Parse(time.RFC3339, s); v.kind == kubeletTime && err != nil {
			return wrong("an RFC 3339 time")
		}
	case kubeletBool:
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return wrong("true or false")
		}
	case kubeletInt, kubeletUint:
		// json.Number would take a quoted number too; the upstream integer fields do not.
		var n json.Number
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) || json.Unmarshal(raw, &n) != nil {
			return wrong("an integer")
		}
		if v.kind == kubeletUint {
			if _, err := strconv.ParseUint(n.String(), 10, v.bits); err != nil {
				return wrong(fmt.Sprintf("a non-negative integer of %d bits", v.bits))
			}
		} else if _, err := strconv.ParseInt(n.String(), 10, v.bits); err != nil {
			return wrong(fmt.Sprintf("an integer of %d bits", v.bits))
		}
	case kubeletFloat:
		var f float64
		if json.Unmarshal(raw, &f) != nil {
			return wrong("a number")
		}
	case kubeletQuantity:
		var q resource.Quantity
		if json.Unmarshal(raw, &q) != nil {
			return wrong("a resource quantity")
		}
	case kubeletArray:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return wrong("a list")
		}
		var errs []error
		for i, item := range items {
			errs = append(errs, v.elem.check(fmt.Sprintf("%s[%d]", path, i), item)...)
		}
		return errs
	case kubeletMap, kubeletObject:
		var fields map[string]json.RawMessage
		if json.Unmarshal(raw, &fields) != nil {
			return wrong("an object")
		}
		var errs []error
		for _, name := range slices.Sorted(maps.Keys(fields)) {
			if v.kind == kubeletMap {
				errs = append(errs, v.elem.check(fmt.Sprintf("%s[%s]", path, name), fields[name])...)
			} else {
				errs = append(errs, v.fields[name].check(path+"."+name, fields[name])...)
			}
		}
		return errs
	}
	return nil
}
