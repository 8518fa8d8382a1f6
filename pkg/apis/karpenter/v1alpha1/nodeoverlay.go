package v1alpha1

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a NodeOverlay's status.
const (
	// ConditionTypeValidationSucceeded is True when the overlay passed the checks the CRD
	// cannot make (its requirements' keys, its capacity's resources) and conflicts with no
	// other overlay of the same weight.
	ConditionTypeValidationSucceeded = "ValidationSucceeded"
	// ConditionTypeReady rolls up ValidationSucceeded: a Ready overlay is applied.
	ConditionTypeReady = "Ready"
)

// Annotations Karpenter puts on a NodeClaim whose instance types NodeOverlays changed.
const (
	// PriceOverlayAppliedAnnotationKey ("true") marks a NodeClaim for which some instance type
	// was priced by a NodeOverlay; a cloud then launches by those prices (on EC2, a
	// prioritized fleet).
	PriceOverlayAppliedAnnotationKey = "karpenter.sh/price-overlay-applied"
	// CapacityOverlayAppliedAnnotationKey ("true") marks a NodeClaim for which some instance
	// type's capacity was extended by a NodeOverlay.
	CapacityOverlayAppliedAnnotationKey = "karpenter.sh/capacity-overlay-applied"
)

// NodeSelectorRequirement selects instance types by a label: a key, an operator relating it to
// the values.
type NodeSelectorRequirement struct {
	// Key is the label key the selector applies to.
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte
	// or Lte.
	// +kubebuilder:validation:Enum:=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator,omitempty"`
	// Values are the values: at least one for In and NotIn, none for Exists and
	// DoesNotExist, one integer for Gt, Lt, Gte and Lte.
	// +optional
	// +listType=atomic
	Values []string `json:"values,omitempty"`
}

// NodeOverlaySpec is what an overlay changes and for which instance types.
type NodeOverlaySpec struct {
	// Requirements select the instance types (and offerings) the overlay applies to, by
	// well-known labels (node.kubernetes.io/instance-type, karpenter.sh/nodepool,
	// karpenter.sh/capacity-type, topology.kubernetes.io/zone, …) or the custom labels of a
	// NodePool's spec.template.labels.
	// +kubebuilder:validation:XValidation:message="requirements with operator 'NotIn' must have a value defined",rule="self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)"
	// +kubebuilder:validation:XValidation:message="requirements with operator 'In' must have a value defined",rule="self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)"
	// +kubebuilder:validation:XValidation:message="requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value",rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)"
	// +kubebuilder:validation:MaxItems:=100
	// +required
	// +listType=atomic
	Requirements []NodeSelectorRequirement `json:"requirements,omitempty"`
	// PriceAdjustment changes the price of the selected offerings: a signed amount in $/hour
	// ("-0.5", "+1.2") or a signed percentage ("+10%", "-15%", down to "-100%"). A price
	// never goes below zero.
	// +kubebuilder:validation:Pattern=`^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$`
	// +optional
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// Price replaces the price, in $/hour, of the selected offerings.
	// +kubebuilder:validation:Pattern=`^\d+(\.\d+)?$`
	// +optional
	Price *string `json:"price,omitempty"`
	// Capacity adds extended resources (hugepages, a device plugin's resources) to the
	// selected instance types; cpu, memory, ephemeral-storage and pods cannot be changed.
	// +kubebuilder:validation:XValidation:message="invalid resource restricted",rule="self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))"
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Weight orders overlays that select the same instance types: the higher weight wins; an
	// unset weight counts as 0. Among equal weights the name later in the alphabet goes first;
	// two overlays of equal weight that price the same offering or add the same resource to
	// the same instance type conflict, and the one evaluated second is not applied.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=10000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// NodeOverlayStatus is what the controller observed of an overlay.
type NodeOverlayStatus struct {
	// Conditions: ValidationSucceeded and the roll-up Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeOverlay changes what Karpenter believes about the instance types its requirements
// select: their prices and their extended resources. Used when the NodeOverlay feature gate
// is on.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=nodeoverlays,scope=Cluster,categories=karpenter,shortName=overlays
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1,description=""
// +kubebuilder:subresource:status
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the overlay changes and where.
	// +kubebuilder:validation:XValidation:message="cannot set both 'price' and 'priceAdjustment'",rule="!has(self.price) || !has(self.priceAdjustment)"
	Spec NodeOverlaySpec `json:"spec"`
	// Status is what the controller observed.
	Status NodeOverlayStatus `json:"status,omitempty"`
}

// NodeOverlayList is a list of NodeOverlays.
//
// +kubebuilder:object:root=true
type NodeOverlayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the overlays.
	Items []NodeOverlay `json:"items"`
}

// OrderByWeight sorts overlays in Karpenter's order of precedence: higher weight first, and
// among equal weights the name later in the alphabet first.
func OrderByWeight(overlays []NodeOverlay) {
	slices.SortStableFunc(overlays, func(a, b NodeOverlay) int {
		if c := cmp.Compare(weightOf(b.Spec.Weight), weightOf(a.Spec.Weight)); c != 0 {
			return c
		}
		return cmp.Compare(b.Name, a.Name)
	})
}

func weightOf(w *int32) int32 {
	if w == nil {
		return 0
	}
	return *w
}
