package nodepool_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/nodepool"
)

// TestControllersInManager runs both controllers in a manager, through their watches and the
// manager's cache, as the operator does.
func TestControllersInManager(t *testing.T) {
	const name = "manager"
	// Created before the manager starts, so the manager stops (cleanups run last-in first-out)
	// before they are deleted.
	nc := createNodeClass(t, name, ptr.To(true))
	createNodePool(t, name, name, func(np *karpv1.NodePool) { np.Spec.Replicas = ptr.To[int64](2) })
	mgr, err := manager.New(env.Config, manager.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		Logger:                 funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nodepool.NewStatusController(mgr.GetClient(), clock.RealClock{}, mgr.GetEventRecorderFor("karpenter")).Register(mgr); err != nil { //nolint:staticcheck
		t.Fatal(err)
	}
	if err := nodepool.NewStaticController(mgr.GetClient(), newCloud(t)).Register(mgr); err != nil {
		t.Fatal(err)
	}
	if err := nodepool.NewRegistrationHealth(mgr.GetClient(), clock.RealClock{}).Register(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })

	// Status Ready, then two claims, then status counting them.
	eventually(t, 30*time.Second, func() error {
		np := getNodePool(t, name)
		if !nodepool.IsReady(np) {
			return errors.New("nodepool is not ready")
		}
		if n := len(activeClaims(t, name)); n != 2 {
			return fmt.Errorf("%d nodeclaims, want 2", n)
		}
		if np.Status.Nodes == nil || *np.Status.Nodes != 2 {
			return fmt.Errorf("status.nodes = %v, want 2", np.Status.Nodes)
		}
		return nil
	})

	// A lost claim is replaced (NodeClaim watch).
	lost := activeClaims(t, name)[0]
	if err := env.Client.Delete(testContext(t), &lost); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		claims := activeClaims(t, name)
		if len(claims) != 2 || claims[0].Name == lost.Name || claims[1].Name == lost.Name {
			return fmt.Errorf("nodeclaims %v, want two without %s", claimNames(claims), lost.Name)
		}
		return nil
	})

	// The NodeClass's spec changes (EC2NodeClass watch): its new generation is observed.
	if err := env.Client.Get(testContext(t), client.ObjectKeyFromObject(nc), nc); err != nil {
		t.Fatal(err)
	}
	nc.Spec.Tags = map[string]string{"team": name}
	if err := env.Client.Update(testContext(t), nc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		np := getNodePool(t, name)
		cond := meta.FindStatusCondition(np.Status.Conditions, karpv1.ConditionTypeNodeRegistrationHealthy)
		if cond == nil || cond.Status != metav1.ConditionUnknown || np.Status.NodeClassObservedGeneration != nc.Generation {
			return fmt.Errorf("NodeRegistrationHealthy = %+v at nodeclass generation %d, want Unknown at %d", cond, np.Status.NodeClassObservedGeneration, nc.Generation)
		}
		return nil
	})

	// The NodeClass stops being ready (EC2NodeClass watch).
	setNodeClassReady(t, nc, false)
	eventually(t, 30*time.Second, func() error {
		cond := meta.FindStatusCondition(getNodePool(t, name).Status.Conditions, karpv1.ConditionTypeReady)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != nodepool.ReasonNodeClassNotReady {
			return fmt.Errorf("Ready = %+v, want False/%s", cond, nodepool.ReasonNodeClassNotReady)
		}
		return nil
	})
}
