package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// How often a NodeClass's instance profile is read again from IAM, and how soon a NodeClass
// that is not Ready is resolved again. Its images, subnets and security groups are read again
// as Options.Refresh says.
const (
	instanceProfileRefresh = 5 * time.Minute
	nodeClassNotReadyRetry = 30 * time.Second
)

// refreshTimes remembers when each part of each NodeClass's status (named by its condition)
// was last read successfully; a spec change is told by the condition's observed generation.
type refreshTimes struct {
	mu   sync.Mutex
	last map[refreshKey]time.Time
}

type refreshKey struct {
	uid  types.UID
	part string
}

// within says whether nc's part was read less than every ago.
func (r *refreshTimes) within(nc *awsv1.EC2NodeClass, part string, every time.Duration, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.last[refreshKey{nc.UID, part}]
	return ok && now.Sub(at) < every
}

// mark records that nc's part was read at now.
func (r *refreshTimes) mark(nc *awsv1.EC2NodeClass, part string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[refreshKey]time.Time{}
	}
	r.last[refreshKey{nc.UID, part}] = now
}

// forget drops what is remembered of a deleted NodeClass.
func (r *refreshTimes) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.last {
		if k.uid == uid {
			delete(r.last, k)
		}
	}
}

// NodeClassController resolves each EC2NodeClass's subnets, security groups, images,
// instance profile, placement group and, with the ReservedCapacity gate, capacity reservations
// into its status with one condition each (SubnetsReady, SecurityGroupsReady, AMIsReady,
// InstanceProfileReady, PlacementGroupReady, CapacityReservationsReady) and the Ready roll-up, and on deletion
// waits for the NodeClaims that use it before removing the instance profile it created.
type NodeClassController struct {
	provider *Provider
}

// NewNodeClassController returns the controller.
func NewNodeClassController(p *Provider) *NodeClassController {
	return &NodeClassController{provider: p}
}

// Register adds the controller to the manager.
func (r *NodeClassController) Register(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("aws.nodeclass").For(&awsv1.EC2NodeClass{}).Complete(r)
}

// Reconcile resolves one EC2NodeClass.
func (r *NodeClassController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	kube := r.provider.opts.KubeClient
	nc := &awsv1.EC2NodeClass{}
	if err := kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp != nil {
		return r.finalize(ctx, nc)
	}
	if !controllerutil.ContainsFinalizer(nc, awsv1.TerminationFinalizer) {
		patch := client.MergeFrom(nc.DeepCopy())
		controllerutil.AddFinalizer(nc, awsv1.TerminationFinalizer)
		if err := kube.Patch(ctx, nc, patch); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	if err := r.stampHash(ctx, nc); err != nil {
		return reconcile.Result{}, err
	}
	before := nc.Status.DeepCopy()
	ready := r.provider.Resolve(ctx, nc)
	if !equality.Semantic.DeepEqual(before, &nc.Status) {
		if err := kube.Status().Update(ctx, nc); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{Requeue: true}, nil
			}
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	if !ready {
		return reconcile.Result{RequeueAfter: nodeClassNotReadyRetry}, nil
	}
	p := r.provider.opts.Refresh
	next := min(p.AMIs, p.Subnets, p.SecurityGroups, instanceProfileRefresh)
	if r.provider.opts.ReservedCapacity {
		next = min(next, reservationRequeue(nc, r.provider.opts.Clock.Now()))
	}
	if nc.Spec.PlacementGroupSelector != nil {
		next = min(next, placementGroupTTL)
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// finalize holds the NodeClass until no NodeClaim uses it, then deletes the instance profile
// the provider created and releases the finalizer.
func (r *NodeClassController) finalize(ctx context.Context, nc *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nc, awsv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	kube := r.provider.opts.KubeClient
	claims := &karpv1.NodeClaimList{}
	if err := kube.List(ctx, claims); err != nil {
		return reconcile.Result{}, err
	}
	for _, c := range claims.Items {
		if ref := c.Spec.NodeClassRef; ref != nil && ref.Name == nc.Name && (ref.Kind == "" || ref.Kind == "EC2NodeClass") {
			return reconcile.Result{RequeueAfter: 10 * time.Second}, nil
		}
	}
	if err := r.provider.deleteInstanceProfile(ctx, nc); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.provider.launchTemplates.deleteForNodeClass(ctx, nc.Name); err != nil {
		return reconcile.Result{}, err
	}
	r.provider.refreshed.forget(nc.UID)
	r.provider.launchChecks.forget(nc.Name)
	patch := client.MergeFrom(nc.DeepCopy())
	controllerutil.RemoveFinalizer(nc, awsv1.TerminationFinalizer)
	return reconcile.Result{}, client.IgnoreNotFound(kube.Patch(ctx, nc, patch))
}

// Resolve fills the NodeClass's status from AWS and sets its conditions; it reports whether the
// NodeClass is ready. Parts that fail keep their previous status values, so instances keep
// launching with what was last resolved only when Ready says so. ValidationSucceeded is
// validate's verdict on the spec and, when that passes, the launch check's (checkLaunch: may
// the controller launch the NodeClass's nodes, unless DisableDryRun).
func (p *Provider) Resolve(ctx context.Context, nc *awsv1.EC2NodeClass) bool {
	now := metav1.NewTime(p.opts.Clock.Now())
	set := func(t string, err error, reasonFalse string) {
		c := metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, ObservedGeneration: nc.Generation, LastTransitionTime: now}
		if err != nil {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, reasonFalse, err.Error()
		}
		meta.SetStatusCondition(&nc.Status.Conditions, c)
	}
	due := func(part string, every time.Duration) bool {
		c := meta.FindStatusCondition(nc.Status.Conditions, part)
		return c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != nc.Generation ||
			!p.refreshed.within(nc, part, every, now.Time)
	}
	resolve := func(part string, every time.Duration, reasonFalse string, read func() error) {
		if !due(part, every) {
			return
		}
		err := read()
		set(part, err, reasonFalse)
		if err == nil {
			p.refreshed.mark(nc, part, now.Time)
		}
	}
	resolve(awsv1.ConditionTypeSubnetsReady, p.opts.Refresh.Subnets, "SubnetsNotFound", func() error {
		subnets, err := p.resolveSubnets(ctx, nc)
		if err == nil {
			nc.Status.Subnets = subnets
		}
		return err
	})
	resolve(awsv1.ConditionTypeSecurityGroupsReady, p.opts.Refresh.SecurityGroups, "SecurityGroupsNotFound", func() error {
		groups, err := p.resolveSecurityGroups(ctx, nc)
		if err == nil {
			nc.Status.SecurityGroups = groups
		}
		return err
	})
	resolve(awsv1.ConditionTypeAMIsReady, p.opts.Refresh.AMIs, "AMINotFound", func() error {
		amis, err := p.resolveAMIs(ctx, nc)
		if err == nil {
			nc.Status.AMIs = amis
		}
		return err
	})
	resolve(awsv1.ConditionTypeInstanceProfileReady, instanceProfileRefresh, "InstanceProfileNotReady", func() error {
		profile, err := p.resolveInstanceProfile(ctx, nc)
		if err == nil {
			nc.Status.InstanceProfile = profile
		}
		return err
	})
	// The placement group, as the AWS provider v1.15.2's PlacementGroupReconciler
	// (nodeclass/placementgroup.go): True without a selector, its reason when False; read again
	// each minute, as its lookups are cached. The group itself is kept in memory, not in status,
	// as upstream's EC2NodeClass status has no field for it.
	if due(awsv1.ConditionTypePlacementGroupReady, placementGroupTTL) {
		reason, err := p.resolvePlacementGroup(ctx, nc)
		set(awsv1.ConditionTypePlacementGroupReady, err, reason)
		if err == nil {
			p.refreshed.mark(nc, awsv1.ConditionTypePlacementGroupReady, now.Time)
		}
	}
	parts := []string{awsv1.ConditionTypeSubnetsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeAMIsReady, awsv1.ConditionTypeInstanceProfileReady,
		awsv1.ConditionTypePlacementGroupReady}
	// Capacity reservations, with the ReservedCapacity gate only, as the AWS provider v1.15.2
	// (nodeclass/capacityreservation.go): read every minute, none selected being no fault; off,
	// the terms are ignored and the condition is not part of Ready.
	if p.opts.ReservedCapacity {
		every := capacityReservationPollPeriod
		if slices.ContainsFunc(nc.Status.CapacityReservations, func(r awsv1.CapacityReservation) bool { return r.EndTime != nil && !now.Before(r.EndTime) }) {
			every = 0 // one has ended: read them again now, as v1.15.2 requeues at the earliest end
		}
		resolve(awsv1.ConditionTypeCapacityReservationsReady, every, "CapacityReservationsNotResolved", func() error {
			reservations, err := p.resolveCapacityReservations(ctx, nc)
			if err == nil {
				nc.Status.CapacityReservations = reservations
			}
			return err
		})
		parts = append(parts, awsv1.ConditionTypeCapacityReservationsReady)
	}
	if reason, err := p.validate(ctx, nc); err != nil {
		set(awsv1.ConditionTypeValidationSucceeded, err, reason)
	} else {
		p.setLaunchVerdict(nc, p.checkLaunch(ctx, nc), now)
	}

	var notReady []string
	var msgs []error
	for _, t := range append(parts, awsv1.ConditionTypeValidationSucceeded) {
		if c := meta.FindStatusCondition(nc.Status.Conditions, t); c.Status != metav1.ConditionTrue {
			notReady = append(notReady, t)
			msgs = append(msgs, fmt.Errorf("%s: %s", t, c.Message))
		}
	}
	if len(notReady) > 0 {
		set(awsv1.ConditionTypeReady, errors.Join(msgs...), notReady[0]+"False")
		return false
	}
	set(awsv1.ConditionTypeReady, nil, "")
	return true
}

// setLaunchVerdict sets ValidationSucceeded as the launch check says; a verdict without a
// status leaves a condition already set as it is and otherwise sets it Unknown.
func (p *Provider) setLaunchVerdict(nc *awsv1.EC2NodeClass, v launchVerdict, now metav1.Time) {
	status := v.status
	if status == "" {
		if meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeValidationSucceeded) != nil {
			return
		}
		status = metav1.ConditionUnknown
	}
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: awsv1.ConditionTypeValidationSucceeded, Status: status, Reason: v.reason,
		Message: v.message, ObservedGeneration: nc.Generation, LastTransitionTime: now})
}

// validate checks that the NodeClass's kubelet configuration is one Karpenter takes and its AMI family applies (cloudprovider.ValidateKubelet), and that
// what its nodes need of the cluster is known: for AL2023, whose nodeadm refuses a NodeConfig
// without it, the cluster's service CIDR. It returns the ValidationSucceeded reason with the
// error.
func (p *Provider) validate(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	family := cloudprovider.OptionsFromNodeClass(nc).AMIFamily
	if reason, err := cloudprovider.ValidateKubelet(nc, p.opts.NodeClassCEL); err != nil {
		return reason, err
	}
	if err := p.evaluateKubelet(ctx, nc); err != nil {
		return cloudprovider.ReasonKubeletExpressionEvaluationFailed, err
	}
	if reason, err := cloudprovider.ValidateNVIDIAConsumableCapacity(nc, p.opts.DRANVIDIAGPU); err != nil {
		return reason, err
	}
	if family != awsv1.AMIFamilyAL2023 && family != "" {
		return "", nil
	}
	info, err := p.launchTemplates.clusterInfo(ctx)
	if err == nil {
		err = info.clusterCIDRError()
	}
	return "ClusterCIDRNotFound", err
}

// readyNodeClass reads the NodeClass a claim or NodePool refers to and checks it is ready.
func (p *Provider) readyNodeClass(ctx context.Context, ref *karpv1.NodeClassReference) (*awsv1.EC2NodeClass, error) {
	if ref == nil || ref.Name == "" {
		return nil, cloudprovider.NewNodeClassNotReadyError(errors.New("no nodeClassRef"))
	}
	if (ref.Kind != "" && ref.Kind != "EC2NodeClass") || (ref.Group != "" && ref.Group != awsv1.Group) {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("nodeClassRef %s/%s %q: the aws provider launches from %s/EC2NodeClass", ref.Group, ref.Kind, ref.Name, awsv1.Group))
	}
	nc := &awsv1.EC2NodeClass{}
	if err := p.opts.KubeClient.Get(ctx, client.ObjectKey{Name: ref.Name}, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %q not found", ref.Name))
		}
		return nil, fmt.Errorf("getting ec2nodeclass %q: %w", ref.Name, err)
	}
	if nc.DeletionTimestamp != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %q is being deleted", nc.Name))
	}
	c := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady)
	if c == nil || c.Status != metav1.ConditionTrue {
		msg := "not resolved yet"
		if c != nil {
			msg = c.Message
		}
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("ec2nodeclass %q is not ready: %s", nc.Name, msg))
	}
	return nc, nil
}
