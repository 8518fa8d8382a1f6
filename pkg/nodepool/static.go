package nodepool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/scheduling"
)

// StaticController keeps static NodePools (spec.replicas set) at their size. For each such
// NodePool that is Ready and not being deleted it keeps exactly DesiredReplicas active
// NodeClaims (labelled with the NodePool and not being deleted):
//
//   - missing claims are created with NewNodeClaim from ClaimRequirements (the NodePool's
//     requirements, its template labels and karpenter.sh/nodepool In [name]), each narrowed to
//     one zone: among the zones the requirements allow in which one of the NodePool's instance
//     types has an available offering (of an allowed capacity type), the one with the fewest
//     active claims, ties to the first by name (a minValues on zones is dropped from the
//     narrowed claim). Without such a zone claims are not narrowed.
//   - extra claims are deleted, preferring those not yet Initialized, then the newest, then
//     the first by name; a claim a disruption command is replacing (static drift launches the
//     replacement first) counts towards the replicas but is never the extra one
//     (WithDisruptionMarks).
//
// Dynamic NodePools and NodePools that are not Ready are left alone.
//
// A cache that lags behind the controller's own writes must not make it create or delete
// twice. So when the client's list disagrees with the desired count, the controller lists
// again through its API reader (WithAPIReader; Register uses the manager's) and acts on that
// fresh list. Without an API reader the client is taken to be consistent, as the API server
// itself and the simulator's in-memory store are.
type StaticController struct {
	kubeClient    client.Client
	apiReader     client.Reader
	instanceTypes cloudprovider.InstanceTypeProvider
	// disrupting reports the claims a disruption command is replacing (WithDisruptionMarks).
	disrupting func(claim string) bool
}

// StaticOption configures a StaticController.
type StaticOption func(*StaticController)

// WithAPIReader makes the controller confirm, through reader (typically a manager's
// GetAPIReader, which bypasses the cache), the NodeClaims of a NodePool before it creates or
// deletes any.
func WithAPIReader(reader client.Reader) StaticOption {
	return func(c *StaticController) { c.apiReader = reader }
}

// WithDisruptionMarks tells the controller which NodeClaims a disruption command is replacing
// (state.Cluster.MarkedForDeletion): as Karpenter's pending-disruption count, such a claim
// still counts towards the replicas, so none is created for it, but is never the extra one
// deleted, so the replacement launched beside it stays.
func WithDisruptionMarks(marked func(claim string) bool) StaticOption {
	return func(c *StaticController) { c.disrupting = marked }
}

// NewStaticController returns a StaticController that reads and writes NodeClaims through
// kubeClient and asks instanceTypes (a CloudProvider) which zones a NodePool can launch in. It
// needs no clock: nothing it does depends on time.
func NewStaticController(kubeClient client.Client, instanceTypes cloudprovider.InstanceTypeProvider, opts ...StaticOption) *StaticController {
	c := &StaticController{kubeClient: kubeClient, instanceTypes: instanceTypes}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// Reconcile creates or deletes NodeClaims of the NodePool named by req until it has as many
// as it should.
func (c *StaticController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx).WithValues("nodepool", req.Name)
	ctx = log.IntoContext(ctx, logger)
	np := &karpv1.NodePool{}
	if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: req.Name}, np); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting nodepool: %w", err)
	}
	if !IsStatic(np) || !np.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	if !IsReady(np) {
		logger.V(1).Info("static nodepool is not ready, leaving its nodeclaims alone")
		return reconcile.Result{}, nil
	}
	desired := DesiredReplicas(np)
	active, err := activeClaimsOf(ctx, c.kubeClient, np.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if int64(len(active)) != desired && c.apiReader != nil {
		// The cache may not show our latest creations or deletions yet: ask the API server.
		if active, err = activeClaimsOf(ctx, c.apiReader, np.Name); err != nil {
			return reconcile.Result{}, err
		}
	}
	running := active
	if c.disrupting != nil {
		running = slices.DeleteFunc(slices.Clone(active), func(claim *karpv1.NodeClaim) bool { return c.disrupting(claim.Name) })
	}
	switch {
	case int64(len(active)) < desired:
		err = c.create(ctx, np, active, int(desired-int64(len(active))))
	case int64(len(running)) > desired:
		err = c.delete(ctx, np, running, int(int64(len(running))-desired))
	}
	return reconcile.Result{}, err
}

// activeClaimsOf lists the NodePool's NodeClaims that are not being deleted, sorted by name.
func activeClaimsOf(ctx context.Context, reader client.Reader, pool string) ([]*karpv1.NodeClaim, error) {
	claims := &karpv1.NodeClaimList{}
	if err := reader.List(ctx, claims, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	var out []*karpv1.NodeClaim
	for i := range claims.Items {
		if claims.Items[i].DeletionTimestamp.IsZero() {
			out = append(out, &claims.Items[i])
		}
	}
	slices.SortFunc(out, func(a, b *karpv1.NodeClaim) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DesiredReplicas is how many NodeClaims a static NodePool should have: spec.replicas, capped
// by spec.limits.nodes when set, never below zero. It is zero for a dynamic NodePool.
func DesiredReplicas(np *karpv1.NodePool) int64 {
	if np.Spec.Replicas == nil {
		return 0
	}
	desired := *np.Spec.Replicas
	if limit, ok := np.Spec.Limits[ResourceNodes]; ok && limit.Value() < desired {
		desired = limit.Value()
	}
	return max(desired, 0)
}

// create makes n NodeClaims for np, spreading them over its zones.
func (c *StaticController) create(ctx context.Context, np *karpv1.NodePool, active []*karpv1.NodeClaim, n int) error {
	logger := log.FromContext(ctx)
	reqs, err := ClaimRequirements(np)
	if err != nil {
		return err
	}
	zones, err := c.zones(ctx, np, reqs)
	if err != nil {
		return err
	}
	if len(zones) == 0 {
		logger.Info("no zone has an available offering for the nodepool, creating nodeclaims without a zone")
	}
	counts := map[string]int{}
	for _, claim := range active {
		if zone := zoneOf(claim); zone != "" {
			counts[zone]++
		}
	}
	for range n {
		claimReqs, zone := reqs, ""
		if len(zones) > 0 {
			zone = leastUsed(zones, counts)
			counts[zone]++
			claimReqs = reqs.With(scheduling.MustRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone))
		}
		specReqs := claimReqs.NodeSelectorRequirements()
		if zone != "" {
			// One zone cannot honour a minValues on zones; the spread across claims does.
			for i := range specReqs {
				if specReqs[i].Key == corev1.LabelTopologyZone {
					specReqs[i].MinValues = nil
				}
			}
		}
		claim := NewNodeClaim(np, specReqs, nil)
		if err := c.kubeClient.Create(ctx, claim); err != nil {
			return fmt.Errorf("creating nodeclaim: %w", err)
		}
		metrics.NodeClaimCreated(metrics.ReasonStatic, np.Name, false)
		logger.Info("created nodeclaim for static nodepool", "nodeclaim", claim.Name, "zone", zone, "replicas", DesiredReplicas(np))
	}
	return nil
}

// delete removes n of the active NodeClaims, in deletion-preference order.
func (c *StaticController) delete(ctx context.Context, np *karpv1.NodePool, active []*karpv1.NodeClaim, n int) error {
	logger := log.FromContext(ctx)
	candidates := slices.Clone(active)
	slices.SortFunc(candidates, deletionOrder)
	for _, claim := range candidates[:n] {
		if err := c.kubeClient.Delete(ctx, claim); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting nodeclaim: %w", err)
		}
		logger.Info("deleted nodeclaim of static nodepool", "nodeclaim", claim.Name, "initialized", initialized(claim), "replicas", DesiredReplicas(np))
	}
	return nil
}

// deletionOrder sorts the claims to delete first to the front: not Initialized before
// Initialized, then newest first, then by name.
func deletionOrder(a, b *karpv1.NodeClaim) int {
	if ia, ib := initialized(a), initialized(b); ia != ib {
		if ia {
			return 1
		}
		return -1
	}
	if ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time; !ta.Equal(tb) {
		return tb.Compare(ta)
	}
	return strings.Compare(a.Name, b.Name)
}

func initialized(claim *karpv1.NodeClaim) bool {
	return claim.IsInitialized()
}

// zones are the zones, sorted, in which some instance type of np whose labels reqs allow has an
// available offering reqs allow (its zone, zone ID and capacity type).
func (c *StaticController) zones(ctx context.Context, np *karpv1.NodePool, reqs scheduling.Requirements) ([]string, error) {
	instanceTypes, err := c.instanceTypes.GetInstanceTypes(ctx, np)
	if err != nil {
		return nil, fmt.Errorf("getting instance types: %w", err)
	}
	offerings := cloudprovider.NewOfferingFilter(reqs)
	var zones []string
	for _, it := range instanceTypes {
		if !labelsAllowed(reqs, it.Labels) {
			continue
		}
		for _, o := range it.Offerings {
			if !o.Available || !offerings.Allows(o) {
				continue
			}
			if !slices.Contains(zones, o.Zone) {
				zones = append(zones, o.Zone)
			}
		}
	}
	slices.Sort(zones)
	return zones, nil
}

// labelsAllowed reports whether reqs allow every label of labels they constrain. Labels reqs
// require but labels lack are not held against it: the template or the offering may set them.
func labelsAllowed(reqs scheduling.Requirements, labels map[string]string) bool {
	for _, r := range reqs.All() {
		if v, ok := labels[r.Key]; ok && !r.Has(v) {
			return false
		}
	}
	return true
}

// zoneOf is the zone a claim launched in (its label), or is pinned to (a requirement In one
// zone), or "" when neither is known.
func zoneOf(claim *karpv1.NodeClaim) string {
	if zone := claim.Labels[corev1.LabelTopologyZone]; zone != "" {
		return zone
	}
	for _, r := range claim.Spec.Requirements {
		if r.Key == corev1.LabelTopologyZone && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}

// leastUsed is the zone with the fewest claims; zones are sorted, so ties go to the first.
func leastUsed(zones []string, counts map[string]int) string {
	best := zones[0]
	for _, z := range zones[1:] {
		if counts[z] < counts[best] {
			best = z
		}
	}
	return best
}

// Register adds the controller to mgr, named "nodepool.static". It reconciles a static
// NodePool when it changes and when one of its NodeClaims changes. Unless WithAPIReader was
// given, it confirms counts through the manager's API reader.
func (c *StaticController) Register(mgr manager.Manager) error {
	if c.apiReader == nil {
		c.apiReader = mgr.GetAPIReader()
	}
	return builder.ControllerManagedBy(mgr).
		Named("nodepool.static").
		For(&karpv1.NodePool{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			np, ok := o.(*karpv1.NodePool)
			return ok && IsStatic(np)
		}))).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(nodePoolOfClaim)).
		Complete(c)
}
