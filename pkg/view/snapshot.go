package view

import (
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/packing"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// Label keys read from nodes that Karpenter did not launch (EKS managed node groups) and from
// nodes of older clusters.
const (
	eksCapacityTypeLabelKey = "eks.amazonaws.com/capacityType"
	eksCapacityTypeSpot     = "SPOT"
	eksCapacityTypeOnDemand = "ON_DEMAND"
)

// Prices gives the $/hour of an instance type in a zone bought as a capacity type, and false
// when it has no price for it. catalog.Prices and cloudprovider.Prices are Prices.
type Prices interface {
	Price(instanceType, zone, capacityType string) (float64, bool)
}

// Objects are what a snapshot is built from: the cluster's Nodes, NodeClaims and Pods, as a
// List returns them. Nothing in them is changed.
type Objects struct {
	// Nodes are the nodes to show (a source may have applied the selector already).
	Nodes []corev1.Node
	// NodeClaims are the claims: those without a Node show as launching.
	NodeClaims []karpv1.NodeClaim
	// Pods are all the cluster's pods: bound ones fill their nodes, unbound ones are pending.
	Pods []corev1.Pod
	// NodePools are the cluster's NodePools, for the packing ratio (Options.InstanceTypes).
	NodePools []karpv1.NodePool
	// DaemonSets are the cluster's DaemonSets, for the packing ratio: what their pods take on
	// the new nodes of a packing from scratch, as the controller's measure counts it.
	DaemonSets []appsv1.DaemonSet
}

// DefaultResources are the resources whose usage a snapshot measures when Options does not say.
var DefaultResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// Options configure NewSnapshot. The zero value gives unpriced rows of CPU and memory usage
// sorted by creation, oldest first, ages counted from the zero time.
type Options struct {
	// Now is the time ages are counted to.
	Now time.Time
	// Prices price the rows; nil leaves every row unpriced.
	Prices Prices
	// Selector keeps only the nodes and NodeClaims whose labels match; nil keeps all. Pending
	// pods are counted across the cluster whatever it says.
	Selector labels.Selector
	// Sort orders the rows; empty means SortCreation.
	Sort SortKey
	// Order is the direction of Sort; empty means the key's DefaultOrder.
	Order SortOrder
	// Resources are the resources whose requests against allocatable the rows show, in order;
	// empty means DefaultResources.
	Resources []corev1.ResourceName
	// ExtraLabels are label keys (or the computed NodeAgeLabel and UsageLabel keys) whose
	// values the rows show in columns of their own, in order.
	ExtraLabels []string
	// Requests, when set, remembers pods' effective requests between snapshots (a live view
	// keeps one); nil computes them afresh.
	Requests *scheduling.RequestsCache
	// InstanceTypes gives the instance types a NodePool may launch, offered in zones (those of
	// the shown nodes), for the packing ratio (Summary.Packing); nil leaves the ratio out.
	InstanceTypes func(np *karpv1.NodePool, zones []string) ([]*cloudprovider.InstanceType, error)
	// Packing, when set, remembers the last packing between snapshots (a live view keeps one),
	// so the pods are re-packed only when the fleet changed; nil re-packs every snapshot.
	Packing *PackingCache
}

// State is what a row's node is doing.
type State string

// The states of a row, from the most to the least pressing when several hold.
const (
	// StateDeleting: the node or its NodeClaim is being deleted, or Karpenter has tainted it
	// karpenter.sh/disrupted to replace or remove it.
	StateDeleting State = "Deleting"
	// StateLaunching: a NodeClaim whose Node has not registered yet.
	StateLaunching State = "Launching"
	// StateNotReady: the node's Ready condition is not True.
	StateNotReady State = "NotReady"
	// StateCordoned: the node is ready but unschedulable.
	StateCordoned State = "Cordoned"
	// StateReady: the node is ready and schedulable.
	StateReady State = "Ready"
)

// Usage is how much of one resource the pods on a node request out of what the node can give
// them.
type Usage struct {
	// Requested and Allocatable are in millicores for CPU and in the resource's plain unit
	// otherwise: bytes for memory and storage, a count for pods and extended resources.
	Requested, Allocatable int64
}

// Fraction is Requested over Allocatable; zero when nothing is allocatable. It may exceed 1
// when pods request more than the node reports (static pods, a shrunk node).
func (u Usage) Fraction() float64 {
	if u.Allocatable <= 0 {
		return 0
	}
	return float64(u.Requested) / float64(u.Allocatable)
}

func (u *Usage) add(o Usage) {
	u.Requested += o.Requested
	u.Allocatable += o.Allocatable
}

// Row is one line of the view: a Node, or a NodeClaim that has no Node yet.
type Row struct {
	// Name is the Node's name, or the NodeClaim's for a claim without a node.
	Name string
	// Claim says the row is a NodeClaim without a Node: it has no usage and no pods.
	Claim bool
	// InstanceType, CapacityType and Zone come from the labels Karpenter sets (for a claim not
	// yet launched, from requirements that allow a single value); empty when unknown.
	InstanceType, CapacityType, Zone string
	// NodePool is the karpenter.sh/nodepool label; empty for nodes Karpenter does not manage.
	NodePool string
	// Price is the $/hour when Priced. A node without a capacity-type label is priced
	// on-demand (nodes of managed node groups and the like usually are).
	Price float64
	// Priced says Price is known: false for instance types, zones or capacity types the
	// prices do not cover, and for claims whose type or capacity type is not decided.
	Priced bool
	// Usage holds, for each of the snapshot's Measured resources in order, the requests of the
	// pods bound to the node that have not finished against the node's allocatable; nil for a
	// claim.
	Usage []Usage
	// Pods counts the pods bound to the node that have not finished (Succeeded or Failed).
	Pods int
	// MaxPods is the node's allocatable pods: the most it may run.
	MaxPods int64
	// Labels are the node's labels; for a claim, its labels and the single values its
	// requirements allow. They are shared with the objects the snapshot was built from: read
	// them only.
	Labels map[string]string
	// Created is when the Node (or the NodeClaim) was created.
	Created time.Time
	// State is what the node is doing.
	State State
}

// Managed reports whether Karpenter manages the row's node (it has a NodePool).
func (r *Row) Managed() bool { return r.NodePool != "" }

// Summary is the cluster's totals over the rows of a snapshot.
type Summary struct {
	// Nodes counts the node rows, Unmanaged those of them without a NodePool.
	Nodes, Unmanaged int
	// Launching counts the NodeClaims without a Node that are not being deleted.
	Launching int
	// PendingPods counts the pods not bound to a node in phase Pending, across the cluster.
	PendingPods int
	// PricePerHour sums the prices of the priced rows, NodeClaims without a node included.
	PricePerHour float64
	// Unpriced counts the rows without a price, left out of PricePerHour.
	Unpriced int
	// Usage sums the usage of the node rows, for each of the snapshot's Measured resources.
	Usage []Usage
	// Packing is the shown Karpenter nodes re-packed from scratch (package packing): their
	// $/hour over the lower bound of their pods' is the packing ratio. Nil without
	// Options.InstanceTypes, or when no pod runs on such nodes. While pods are pending or
	// NodeClaims launching (Unsettled) the fleet is between two states and its ratio says
	// little: a live view (Options.Packing) holds the last one measured when neither was so,
	// measured at PackingAsOf.
	Packing *packing.Result
	// Unsettled is true while pods are pending or NodeClaims launching.
	Unsettled bool
	// PackingAsOf, when set, is when the held Packing was measured.
	PackingAsOf time.Time
}

// PricePerMonth is PricePerHour over a month of cloudprovider.HoursPerMonth.
func (s Summary) PricePerMonth() float64 { return s.PricePerHour * cloudprovider.HoursPerMonth }

// Snapshot is one frame of the view: sorted rows and their totals at a moment.
type Snapshot struct {
	// Now is the moment ages are counted to.
	Now time.Time
	// Rows are the nodes and the NodeClaims without one, in the order asked for.
	Rows []Row
	// Summary totals the rows, and counts the cluster's pending pods.
	Summary Summary
	// Resources are the resources whose usage the rows show, as Options.Resources asked.
	Resources []corev1.ResourceName
	// Measured are the resources Row.Usage and Summary.Usage hold, in order: Resources first,
	// then any other one that the sort or an extra label reads.
	Measured []corev1.ResourceName
	// ExtraLabels are the label keys whose values the rows show, as Options.ExtraLabels asked.
	ExtraLabels []string
}

// measured returns the resources a snapshot of opts measures: opts.Resources (or
// DefaultResources), then those that its sort and its extra labels read.
func measured(opts Options) (shown, all []corev1.ResourceName) {
	shown = opts.Resources
	if len(shown) == 0 {
		shown = DefaultResources
	}
	all = shown
	need := func(name corev1.ResourceName) {
		if name != "" && !slices.Contains(all, name) {
			all = append(slices.Clip(all), name)
		}
	}
	need(sortResource(opts.Sort))
	for _, key := range opts.ExtraLabels {
		name, _ := usageLabelResource(key)
		need(name)
	}
	return shown, all
}

// NewSnapshot builds the rows and the summary of objs. It reads nothing but its arguments and
// gives the same snapshot for the same input.
func NewSnapshot(objs Objects, opts Options) Snapshot {
	selector := opts.Selector
	if selector == nil {
		selector = labels.Everything()
	}
	requests := scheduling.PodRequests
	if opts.Requests != nil {
		requests = opts.Requests.Get
	}
	shown, all := measured(opts)
	s := Snapshot{Now: opts.Now, Rows: make([]Row, 0, len(objs.Nodes)), Resources: shown, Measured: all, ExtraLabels: opts.ExtraLabels}
	// One array holds the usage of every node row, sliced row by row.
	usage := make([]Usage, len(objs.Nodes)*len(all))

	// Join claims to nodes by node name or provider ID, over every node: a claim whose node
	// the selector hides still has a node.
	nodeNames := make(map[string]bool, len(objs.Nodes))
	providerIDs := make(map[string]bool, len(objs.Nodes))
	for i := range objs.Nodes {
		if name := objs.Nodes[i].Name; name != "" {
			nodeNames[name] = true
		}
		if id := objs.Nodes[i].Spec.ProviderID; id != "" {
			providerIDs[id] = true
		}
	}
	claimByNode := make(map[string]*karpv1.NodeClaim, len(objs.NodeClaims))
	claimByProviderID := make(map[string]*karpv1.NodeClaim, len(objs.NodeClaims))
	for i := range objs.NodeClaims {
		claim := &objs.NodeClaims[i]
		if claim.Status.NodeName != "" {
			claimByNode[claim.Status.NodeName] = claim
		}
		if claim.Status.ProviderID != "" {
			claimByProviderID[claim.Status.ProviderID] = claim
		}
		hasNode := nodeNames[claim.Status.NodeName] || providerIDs[claim.Status.ProviderID]
		if hasNode || !selector.Matches(labels.Set(claim.Labels)) {
			continue
		}
		s.Rows = append(s.Rows, claimRow(claim, opts.Prices))
	}

	rowByNode := make(map[string]int, len(objs.Nodes))
	for i := range objs.Nodes {
		node := &objs.Nodes[i]
		if !selector.Matches(labels.Set(node.Labels)) {
			continue
		}
		claim := claimByNode[node.Name]
		if claim == nil && node.Spec.ProviderID != "" {
			claim = claimByProviderID[node.Spec.ProviderID]
		}
		rowByNode[node.Name] = len(s.Rows)
		row := nodeRow(node, claim, opts.Prices)
		row.Usage, usage = usage[:len(all):len(all)], usage[len(all):]
		for j, name := range all {
			row.Usage[j].Allocatable = quantity(node.Status.Allocatable, name)
		}
		s.Rows = append(s.Rows, row)
	}

	for i := range objs.Pods {
		pod := &objs.Pods[i]
		if pod.Spec.NodeName == "" {
			if pod.Status.Phase == corev1.PodPending {
				s.Summary.PendingPods++
			}
			continue
		}
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		idx, ok := rowByNode[pod.Spec.NodeName]
		if !ok {
			continue
		}
		req := requests(pod)
		row := &s.Rows[idx]
		row.Pods++
		for j, name := range all {
			row.Usage[j].Requested += quantity(req, name)
		}
	}

	s.Summary.Usage = make([]Usage, len(all))

	for i := range s.Rows {
		row := &s.Rows[i]
		if row.Priced {
			s.Summary.PricePerHour += row.Price
		} else {
			s.Summary.Unpriced++
		}
		if row.Claim {
			if row.State == StateLaunching {
				s.Summary.Launching++
			}
			continue
		}
		s.Summary.Nodes++
		if !row.Managed() {
			s.Summary.Unmanaged++
		}
		for j := range all {
			s.Summary.Usage[j].add(row.Usage[j])
		}
	}
	s.Summary.Unsettled = s.Summary.PendingPods > 0 || s.Summary.Launching > 0
	if opts.InstanceTypes != nil {
		s.Summary.Packing = repack(objs, s.Rows, rowByNode, opts.InstanceTypes, opts.Packing)
		if opts.Packing != nil {
			s.Summary.Packing, s.Summary.PackingAsOf = opts.Packing.hold(s.Summary.Packing, s.Summary.Unsettled, opts.Now)
		}
	}
	sortRows(&s, opts.Sort, opts.Order)
	return s
}

// repack re-packs the pods of the rows' Karpenter nodes from scratch, per NodePool, on the
// instance types its NodePool may launch: the nodes' prices are the fleet's cost (but for
// nodes being deleted, whose pods are moving), their pods (not daemonset or mirror pods) the
// pods to pack, and the DaemonSets' pods what every new node of the packing carries, as the
// controller's measure (karpenter_cluster_packing_ratio) counts them. It is nil when no such
// pod runs.
func repack(objs Objects, rows []Row, rowByNode map[string]int, instanceTypes func(*karpv1.NodePool, []string) ([]*cloudprovider.InstanceType, error), cache *PackingCache) *packing.Result {
	seen := map[string]bool{}
	for i := range rows {
		if z := rows[i].Zone; z != "" {
			seen[z] = true
		}
	}
	zones := slices.Sorted(maps.Keys(seen))
	pools := map[string]*packing.Pool{}
	for i := range objs.NodePools {
		np := &objs.NodePools[i]
		if np.DeletionTimestamp != nil || np.Spec.Replicas != nil {
			continue
		}
		its, err := instanceTypes(np, zones)
		if err != nil {
			continue
		}
		sp, err := state.SchedulerNodePool(np, its)
		if err != nil {
			continue
		}
		pools[np.Name] = &packing.Pool{NodePool: sp}
	}
	for i := range rows {
		row := &rows[i]
		if p := pools[row.NodePool]; p != nil && !row.Claim && row.State != StateDeleting && row.Priced {
			p.Current += row.Price
			p.Nodes++
		}
	}
	pods := 0
	for i := range objs.Pods {
		pod := &objs.Pods[i]
		idx, ok := rowByNode[pod.Spec.NodeName]
		if !ok || !state.IsReschedulable(pod) {
			continue
		}
		if p := pools[rows[idx].NodePool]; p != nil {
			p.Pods = append(p.Pods, pod)
			pods++
		}
	}
	if pods == 0 {
		return nil
	}
	daemonSets := make([]*appsv1.DaemonSet, len(objs.DaemonSets))
	for i := range objs.DaemonSets {
		daemonSets[i] = &objs.DaemonSets[i]
	}
	in := packing.Input{DaemonPods: state.DaemonPods(daemonSets)}
	for _, name := range slices.Sorted(maps.Keys(pools)) {
		if p := pools[name]; p.Nodes > 0 || len(p.Pods) > 0 {
			in.Pools = append(in.Pools, *p)
		}
	}
	if cache == nil {
		return packing.Compute(in)
	}
	return cache.get(objs, zones, in)
}

// nodeRow is the row of a node without its pods; claim, which may be nil, is its NodeClaim.
func nodeRow(node *corev1.Node, claim *karpv1.NodeClaim, prices Prices) Row {
	row := Row{
		Name:         node.Name,
		InstanceType: firstLabel(node.Labels, corev1.LabelInstanceTypeStable, corev1.LabelInstanceType),
		CapacityType: capacityType(node.Labels),
		Zone:         firstLabel(node.Labels, corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone),
		NodePool:     node.Labels[karpv1.NodePoolLabelKey],
		MaxPods:      quantity(node.Status.Allocatable, corev1.ResourcePods),
		Labels:       node.Labels,
		Created:      node.CreationTimestamp.Time,
		State:        nodeState(node, claim),
	}
	priceAs := row.CapacityType
	if priceAs == "" {
		priceAs = karpv1.CapacityTypeOnDemand
	}
	row.Price, row.Priced = price(prices, row.InstanceType, row.Zone, priceAs)
	return row
}

// claimRow is the row of a NodeClaim that has no node. A launched claim carries the labels of
// its instance; one not launched yet only its requirements.
func claimRow(claim *karpv1.NodeClaim, prices Prices) Row {
	row := Row{
		Name:         claim.Name,
		Claim:        true,
		InstanceType: claimValue(claim, corev1.LabelInstanceTypeStable),
		CapacityType: claimValue(claim, karpv1.CapacityTypeLabelKey),
		Zone:         claimValue(claim, corev1.LabelTopologyZone),
		NodePool:     claim.Labels[karpv1.NodePoolLabelKey],
		Labels:       claimLabels(claim),
		Created:      claim.CreationTimestamp.Time,
		State:        StateLaunching,
	}
	if claim.DeletionTimestamp != nil {
		row.State = StateDeleting
	}
	row.Price, row.Priced = price(prices, row.InstanceType, row.Zone, row.CapacityType)
	return row
}

func price(prices Prices, instanceType, zone, capacityType string) (float64, bool) {
	if prices == nil || instanceType == "" || capacityType == "" {
		return 0, false
	}
	return prices.Price(instanceType, zone, capacityType)
}

func nodeState(node *corev1.Node, claim *karpv1.NodeClaim) State {
	if node.DeletionTimestamp != nil || claim != nil && claim.DeletionTimestamp != nil {
		return StateDeleting
	}
	for _, t := range node.Spec.Taints {
		if t.Key == karpv1.DisruptedTaintKey {
			return StateDeleting
		}
	}
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	switch {
	case !ready:
		return StateNotReady
	case node.Spec.Unschedulable:
		return StateCordoned
	default:
		return StateReady
	}
}

// capacityType reads Karpenter's capacity-type label, or EKS managed node groups' one.
func capacityType(l map[string]string) string {
	if v := l[karpv1.CapacityTypeLabelKey]; v != "" {
		return v
	}
	switch l[eksCapacityTypeLabelKey] {
	case eksCapacityTypeSpot:
		return karpv1.CapacityTypeSpot
	case eksCapacityTypeOnDemand:
		return karpv1.CapacityTypeOnDemand
	}
	return ""
}

// claimValue is the claim's label key, else the single value its requirements allow for key,
// else empty.
func claimValue(claim *karpv1.NodeClaim, key string) string {
	if v := claim.Labels[key]; v != "" {
		return v
	}
	for _, r := range claim.Spec.Requirements {
		if r.Key == key && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}

// claimLabels are the claim's labels and, for the keys it has no label for, the single value
// its requirements allow; the claim's own map when the requirements add nothing.
func claimLabels(claim *karpv1.NodeClaim) map[string]string {
	l, copied := claim.Labels, false
	for _, r := range claim.Spec.Requirements {
		if _, ok := l[r.Key]; ok || r.Operator != corev1.NodeSelectorOpIn || len(r.Values) != 1 {
			continue
		}
		if !copied {
			l, copied = make(map[string]string, len(claim.Labels)+1), true
			maps.Copy(l, claim.Labels)
		}
		l[r.Key] = r.Values[0]
	}
	return l
}

func firstLabel(l map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := l[k]; v != "" {
			return v
		}
	}
	return ""
}

// quantity is the amount of name in list: millicores for CPU, the plain value otherwise.
func quantity(list corev1.ResourceList, name corev1.ResourceName) int64 {
	q, ok := list[name]
	if !ok {
		return 0
	}
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}
