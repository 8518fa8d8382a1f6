package sim

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// NodeClassStatusController plays, for the simulated cloud, the part of the AWS provider's
// EC2NodeClass controller: it resolves a NodeClass's selector terms to the cloud's subnets (one
// per zone), security groups, images (one per architecture) and instance profile, writes them
// to its status, and marks it Ready, so NodePools that use it can launch; one the AWS provider
// would refuse (its kubelet configuration by cloudprovider.ValidateKubelet, and with the
// NodeClassCEL gate InstanceTypeOptions.EvaluateKubelet), or one asking for what this cloud does
// not model (cloudprovider.ValidateSimulated: Windows nodes, placement groups), is marked not
// Ready instead, with the reason in
// ValidationSucceeded.
type NodeClassStatusController struct {
	kubeClient client.Client
	cloud      *Cloud
	clock      clock.PassiveClock
}

// NewNodeClassStatusController returns the controller.
func NewNodeClassStatusController(kubeClient client.Client, cloud *Cloud) *NodeClassStatusController {
	return &NodeClassStatusController{kubeClient: kubeClient, cloud: cloud, clock: cloud.Clock()}
}

// Reconcile resolves one EC2NodeClass.
func (r *NodeClassStatusController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &awsv1.EC2NodeClass{}
	if err := r.kubeClient.Get(ctx, req.NamespacedName, nc); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if nc.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	before := nc.Status.DeepCopy()
	r.resolve(nc)
	// Read again when a selected reservation starts expiring or ends.
	result := reconcile.Result{RequeueAfter: r.cloud.reservationChange(nc, r.clock.Now())}
	if equality.Semantic.DeepEqual(before, &nc.Status) {
		return result, nil
	}
	if err := r.kubeClient.Status().Update(ctx, nc); err != nil {
		return reconcile.Result{}, fmt.Errorf("updating ec2nodeclass %s status: %w", nc.Name, err)
	}
	return result, nil
}

func (r *NodeClassStatusController) resolve(nc *awsv1.EC2NodeClass) {
	terms := canonical(nc.Spec.SubnetSelectorTerms)
	nc.Status.Subnets = nil
	for i, zone := range r.cloud.Zones() {
		nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{
			ID: "subnet-" + digest("subnet", terms, zone)[:17], Zone: zone, ZoneID: fmt.Sprintf("%s-az%d", regionPrefix(r.cloud.Region()), i+1),
		})
	}
	nc.Status.SecurityGroups = nil
	for _, term := range nc.Spec.SecurityGroupSelectorTerms {
		sg := awsv1.SecurityGroup{ID: term.ID, Name: term.Name}
		if sg.ID == "" {
			sg.ID = "sg-" + digest("sg", canonical(term))[:17]
		}
		if sg.Name == "" {
			sg.Name = "sim-" + sg.ID
		}
		nc.Status.SecurityGroups = append(nc.Status.SecurityGroups, sg)
	}
	nc.Status.AMIs = nil
	for _, arch := range []string{"amd64", "arm64"} {
		nc.Status.AMIs = append(nc.Status.AMIs, awsv1.AMI{
			ID:   imageID(&awsv1.EC2NodeClass{Spec: nc.Spec}, map[string]string{corev1.LabelArchStable: arch}),
			Name: "sim-" + arch,
			Requirements: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch},
			}},
		})
	}
	if nc.Spec.InstanceProfile != nil {
		nc.Status.InstanceProfile = *nc.Spec.InstanceProfile
	} else {
		nc.Status.InstanceProfile = "sim_" + digest("profile", nc.Spec.Role)[:16]
	}
	// The capacity reservations the terms select, with the ReservedCapacity gate, as the AWS
	// provider resolves them (active ones only; a Capacity Block within 40 minutes of its end
	// expiring).
	nc.Status.CapacityReservations = nil
	if r.cloud.reservedCapacity && len(nc.Spec.CapacityReservationSelectorTerms) > 0 {
		nc.Status.CapacityReservations = r.cloud.selectedReservations(nc, r.clock.Now())
	}
	// What the AWS provider refuses (a field neither provider supports yet, a kubelet
	// configuration Karpenter would not take) is refused the same way, and so are Windows
	// nodes and placement groups, which this cloud does not model; the NodeClass is then not
	// Ready, so nothing launches from it.
	reason, _, err := cloudprovider.ValidateSimulated(nc)
	if err == nil {
		reason, err = cloudprovider.ValidateKubelet(nc, r.cloud.kubeletExpressions)
	}
	if err == nil {
		// With the NodeClassCEL gate, its expressions must evaluate for every instance type
		// the cloud sells, as the AWS provider checks them.
		opts := cloudprovider.OptionsFromNodeClass(nc)
		opts.KubeletExpressions = r.cloud.kubeletExpressions
		if err = opts.EvaluateKubelet(r.cloud.entries); err != nil {
			reason = cloudprovider.ReasonKubeletExpressionEvaluationFailed
		}
	}
	if err == nil {
		reason, err = cloudprovider.ValidateNVIDIAConsumableCapacity(nc, r.cloud.draNVIDIAGPU)
	}
	if err != nil {
		now := metav1.NewTime(r.clock.Now())
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: awsv1.ConditionTypeValidationSucceeded, Status: metav1.ConditionFalse,
			Reason: reason, ObservedGeneration: nc.Generation, Message: err.Error(), LastTransitionTime: now})
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: awsv1.ConditionTypeReady, Status: metav1.ConditionFalse,
			Reason: awsv1.ConditionTypeValidationSucceeded + "False", ObservedGeneration: nc.Generation,
			Message: awsv1.ConditionTypeValidationSucceeded + ": " + err.Error(), LastTransitionTime: now})
	}
	conditions := []string{awsv1.ConditionTypeSubnetsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeAMIsReady,
		awsv1.ConditionTypeInstanceProfileReady, awsv1.ConditionTypeValidationSucceeded, awsv1.ConditionTypeReady}
	if r.cloud.reservedCapacity {
		conditions = append(conditions, awsv1.ConditionTypeCapacityReservationsReady)
	}
	if nc.Spec.PlacementGroupSelector == nil {
		// As the AWS provider: True without a selector (one is refused above).
		conditions = append(conditions, awsv1.ConditionTypePlacementGroupReady)
	}
	for _, t := range conditions {
		if c := meta.FindStatusCondition(nc.Status.Conditions, t); c != nil && c.ObservedGeneration == nc.Generation &&
			(c.Status == metav1.ConditionTrue || (c.Status == metav1.ConditionFalse && c.Reason != t)) {
			continue
		}
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
			Type: t, Status: metav1.ConditionTrue, Reason: t, ObservedGeneration: nc.Generation,
			Message: "resolved by the simulated cloud", LastTransitionTime: metav1.NewTime(r.clock.Now()),
		})
	}
}

func regionPrefix(region string) string {
	parts := strings.Split(region, "-")
	if len(parts) < 3 {
		return region
	}
	return parts[0] + parts[1][:1] + parts[2]
}

// Register adds the controller to the manager.
func (r *NodeClassStatusController) Register(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("sim.nodeclass.status").For(&awsv1.EC2NodeClass{}).Complete(r)
}
