package provisioning

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// SchedulerLease is the Lease a kube-scheduler with leader election (its default, and every
// managed control plane's) holds and renews every few seconds.
var SchedulerLease = client.ObjectKey{Namespace: "kube-system", Name: "kube-scheduler"}

// SchedulerStale is how long after its last renewal the kube-scheduler's Lease says no
// scheduler runs: several times its lease duration (15s by default).
const SchedulerStale = 2 * time.Minute

// NoScheduler says why no kube-scheduler seems to run, read from its Lease at now: missing, or
// not renewed for SchedulerStale; "" when one runs, or when the Lease cannot be read (the
// controller's RBAC may not grant it), which tells nothing.
func NoScheduler(ctx context.Context, reader client.Reader, now time.Time) string {
	lease := &coordinationv1.Lease{}
	err := reader.Get(ctx, SchedulerLease, lease)
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("the Lease %s, which a kube-scheduler with leader election holds, does not exist", SchedulerLease)
	case err != nil:
		log.FromContext(ctx).V(1).Info("cannot tell whether a kube-scheduler runs", "lease", SchedulerLease.String(), "error", err.Error())
		return ""
	}
	renewed := lease.CreationTimestamp.Time
	if lease.Spec.RenewTime != nil {
		renewed = lease.Spec.RenewTime.Time
	}
	if age := now.Sub(renewed); age > SchedulerStale {
		return fmt.Sprintf("the Lease %s, which a running kube-scheduler renews every few seconds, was last renewed %s ago", SchedulerLease, age.Round(time.Second))
	}
	return ""
}

// SchedulerCheck logs once, when the controller starts, that no kube-scheduler seems to run
// (NoScheduler): Karpenter launches nodes only for pods a scheduler has marked unschedulable,
// and only a scheduler binds pods to the nodes it launches. The provisioner says it again if
// pods wait with no PodScheduled condition (NoSchedulerAfter).
type SchedulerCheck struct {
	reader client.Reader
	now    func() time.Time
}

// NewSchedulerCheck returns the check, reading the Lease through reader (the API server, not a
// cache) and the time from now.
func NewSchedulerCheck(reader client.Reader, now func() time.Time) *SchedulerCheck {
	return &SchedulerCheck{reader: reader, now: now}
}

// Register runs the check once under mgr, on every replica.
func (c *SchedulerCheck) Register(mgr manager.Manager) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		c.Check(ctx)
		return nil
	}))
}

// Check logs the warning when no kube-scheduler seems to run, and reports whether it did.
func (c *SchedulerCheck) Check(ctx context.Context) bool {
	why := NoScheduler(ctx, c.reader, c.now())
	if why == "" {
		return false
	}
	log.FromContext(ctx).Info("no kube-scheduler seems to be running: Karpenter launches nodes for the pods a kube-scheduler marks unschedulable, and only a kube-scheduler binds pods to nodes",
		"reason", why)
	return true
}
