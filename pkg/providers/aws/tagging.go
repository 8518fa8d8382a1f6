package aws

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
)

// InstanceTagger tags the instance of each registered NodeClaim with the node's name (Name,
// what the EC2 console shows), the claim's name and the cluster's, once, then marks the claim
// with Karpenter's annotations, as Karpenter's nodeclaim.tagging controller does. Its
// CreateTags call on a running instance is the one Karpenter's IAM policy allows only for
// these three keys.
type InstanceTagger struct {
	provider *Provider
}

// NewInstanceTagger returns the controller.
func NewInstanceTagger(p *Provider) *InstanceTagger { return &InstanceTagger{provider: p} }

// Register adds the controller to the manager: it watches the NodeClaims of EC2NodeClasses
// that have a node and are not yet tagged.
func (t *InstanceTagger) Register(mgr manager.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("aws.nodeclaim.tagging").For(&karpv1.NodeClaim{}).
		WithEventFilter(predicate.NewPredicateFuncs(func(o client.Object) bool {
			claim, ok := o.(*karpv1.NodeClaim)
			return ok && taggable(claim)
		})).
		Complete(t)
}

// taggable says the claim is an EC2NodeClass's, registered (its node's name is known), not
// terminating and not yet tagged.
func taggable(claim *karpv1.NodeClaim) bool {
	if claim.Spec.NodeClassRef == nil || claim.Spec.NodeClassRef.Group != awsv1.Group {
		return false
	}
	done := claim.Annotations[awsv1.AnnotationInstanceTagged] == "true" && claim.Annotations[awsv1.AnnotationClusterNameTagged] == "true"
	return !done && claim.Status.NodeName != "" && claim.Status.ProviderID != "" && claim.DeletionTimestamp == nil
}

// Reconcile tags one claim's instance with the tags it lacks and annotates the claim.
func (t *InstanceTagger) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	kube := t.provider.opts.KubeClient
	claim := &karpv1.NodeClaim{}
	if err := kube.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !taggable(claim) {
		return reconcile.Result{}, nil
	}
	if err := t.provider.refuseInShiftedZone(claim, "tag creation"); err != nil {
		// Tried again when the claim changes or the shift ends (the next resync).
		log.FromContext(ctx).V(1).Info(err.Error())
		return reconcile.Result{RequeueAfter: time.Minute}, nil
	}
	inst, err := t.provider.get(ctx, claim.Status.ProviderID)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		return reconcile.Result{}, nil // gone: the claim's own controllers see to it
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	want := map[string]string{TagName: claim.Status.NodeName, TagNodeClaim: claim.Name, TagEKSClusterName: t.provider.opts.ClusterName}
	have := tagMap(inst.Tags)
	var missing []ec2types.Tag
	for _, k := range []string{TagName, TagNodeClaim, TagEKSClusterName} {
		if _, ok := have[k]; !ok {
			missing = append(missing, ec2types.Tag{Key: aws.String(k), Value: aws.String(want[k])})
		}
	}
	if len(missing) > 0 {
		if _, err := t.provider.clients.EC2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{inst.id()}, Tags: missing}); err != nil {
			if isNotFound(err) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("tagging instance %s: %w", inst.id(), err)
		}
	}
	patch := client.MergeFrom(claim.DeepCopy())
	if claim.Annotations == nil {
		claim.Annotations = map[string]string{}
	}
	claim.Annotations[awsv1.AnnotationInstanceTagged] = "true"
	claim.Annotations[awsv1.AnnotationClusterNameTagged] = "true"
	return reconcile.Result{}, client.IgnoreNotFound(kube.Patch(ctx, claim, patch))
}
