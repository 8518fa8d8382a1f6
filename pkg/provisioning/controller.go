package provisioning

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/state"
)

// recheckAfter is how often a pod that stays unschedulable triggers another pass (capacity or
// NodePools may have changed without an event on the pod).
const recheckAfter = 10 * time.Second

// PodController triggers the provisioner for pods that wait for capacity.
type PodController struct {
	kubeClient  client.Client
	provisioner *Provisioner
}

// NewPodController returns the controller.
func NewPodController(kubeClient client.Client, p *Provisioner) *PodController {
	return &PodController{kubeClient: kubeClient, provisioner: p}
}

// Reconcile triggers a provisioning pass when the pod is provisionable.
func (c *PodController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	ok, wait := state.IsProvisionableAt(pod, c.provisioner.clock.Now())
	if !ok && pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && pod.Status.NominatedNodeName != "" {
		// Its nominated node holds it only for a while (state.StaleNomination): once that node
		// has turned it away, the pod waits for capacity again.
		if !c.provisioner.cluster.StaleNomination(pod.UID, pod.Status.NominatedNodeName) {
			return reconcile.Result{RequeueAfter: recheckAfter}, nil
		}
		ok = true
	}
	if !ok {
		// A pod still in the kube-scheduler's queue is looked at again once it counts.
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	// The moment the pod is first seen waiting for capacity, which the pod metrics measure from.
	c.provisioner.cluster.AckPods(pod)
	c.provisioner.Trigger()
	return reconcile.Result{RequeueAfter: recheckAfter}, nil
}

// Register adds the controller, and the provisioner itself, to the manager. NodePool changes
// also trigger a pass (a NodePool becoming Ready, limits raised), and so does a NodeClaim's
// deletion, when it starts (its node's pods are placed while it drains) and when it ends. The
// cluster state learns of the deletion at once, since a claim deleted right after its creation (a launch failing with insufficient capacity)
// may never be seen by the cache, and would otherwise hold its pods' nominations until
// state.CreatedClaimTTL.
func (c *PodController) Register(mgr manager.Manager) error {
	if err := mgr.Add(c.provisioner); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("provisioning.pod").
		For(&corev1.Pod{}).
		Watches(&karpv1.NodePool{}, handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			c.provisioner.Trigger()
			return nil
		})).
		Watches(&karpv1.NodeClaim{}, handler.Funcs{
			// A claim starting to delete: its node's pods are placed while it drains.
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if e.ObjectOld.GetDeletionTimestamp() == nil && e.ObjectNew.GetDeletionTimestamp() != nil {
					c.provisioner.Trigger()
				}
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				c.provisioner.ClaimDeleted(e.Object.GetName())
			},
		}).
		Complete(c)
}

// ClaimDeleted tells the provisioner that a NodeClaim is gone: the cluster state forgets it
// (see state.Cluster.ClaimDeleted) and a pass places its pods again.
func (p *Provisioner) ClaimDeleted(name string) {
	p.cluster.ClaimDeleted(name)
	p.Trigger()
}
