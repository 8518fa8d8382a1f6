package provisioning

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/metrics"
	"github.com/openkarpenter/karpenter/pkg/nodeoverlay"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
	"github.com/openkarpenter/karpenter/pkg/scheduler"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// Launcher turns the scheduler's new claims into NodeClaims, the same way for the provisioner
// (capacity for pending pods) and disruption (replacements): it creates the NodeClaim, records
// it in the cluster state (so that the next pass sees it before the cache does), counts it in
// karpenter_nodeclaims_created_total and logs it. The NodeClaim lifecycle controller launches
// the instance.
type Launcher struct {
	kube    client.Client
	cluster *state.Cluster
}

// NewLauncher returns a Launcher writing through kube and recording in cluster.
func NewLauncher(kube client.Client, cluster *state.Cluster) *Launcher {
	return &Launcher{kube: kube, cluster: cluster}
}

// Launch creates the NodeClaim of claim, from NodePool np. reason is the metric's (metrics.
// ReasonProvisioned, or metrics.DisruptionReason of the disruption it replaces for).
func (l *Launcher) Launch(ctx context.Context, np *karpv1.NodePool, claim *scheduler.Claim, reason string) (*karpv1.NodeClaim, error) {
	nc := nodepool.NewNodeClaim(np, claim.NodeSelectorRequirements(), claim.Requests)
	nodeoverlay.Annotate(nc, claim.InstanceTypes)
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	// As Karpenter's scheduler, on every NodeClaim it makes.
	nc.Annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey] = strconv.FormatBool(claim.MinValuesRelaxed)
	if err := l.kube.Create(ctx, nc); err != nil {
		return nil, fmt.Errorf("creating nodeclaim for nodepool %s: %w", np.Name, err)
	}
	l.cluster.RecordCreated(nc)
	metrics.NodeClaimCreated(reason, np.Name, claim.MinValuesRelaxed)
	log.FromContext(ctx).Info("created nodeclaim", "nodeclaim", nc.Name, "nodepool", np.Name, "reason", reason,
		"pods", len(claim.Pods), "instance-types", instanceTypeNames(claim.InstanceTypes, 5), "price", claim.Price)
	return nc, nil
}

// instanceTypeNames lists the first n names, and how many more there are.
func instanceTypeNames(types []*cloudprovider.InstanceType, n int) string {
	names := make([]string, 0, n)
	for i, it := range types {
		if i == n {
			names = append(names, fmt.Sprintf("and %d more", len(types)-n))
			break
		}
		names = append(names, it.Name)
	}
	return strings.Join(names, ", ")
}
