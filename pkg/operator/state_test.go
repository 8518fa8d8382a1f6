package operator_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/operator"
	"github.com/openkarpenter/karpenter/pkg/providers/sim"
)

// TestUnusableSimStateStopsTheStart: a simulated cloud whose state ConfigMap is another
// program's, or corrupt, is reported once, by Start returning at once with the fix, rather than
// by every controller on every call; the ConfigMap is left as it was.
func TestUnusableSimStateStopsTheStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		cm   corev1.ConfigMap
		want string
	}{
		{"foreign", corev1.ConfigMap{Data: map[string]string{"settings": "x"}}, "has no binaryData key state.json.gz: it is not the simulated cloud's state"},
		{"corrupt", corev1.ConfigMap{BinaryData: map[string][]byte{sim.ConfigMapStateKey: []byte("not gzip")}}, "decoding the simulated cloud's state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			cm := tc.cm
			cm.ObjectMeta = metav1.ObjectMeta{Namespace: "default", Name: "sim-state-" + tc.name}
			if err := env.Client.Create(ctx, &cm); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(ctx, &cm) })
			opts := operator.DefaultOptions()
			opts.LeaderElection = false
			opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
			opts.SkipControllerNameValidation = true
			opts.Sim.StateConfigMap = cm.Name
			op, err := operator.New(env.Config, opts)
			if err != nil {
				t.Fatal(err)
			}
			runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			err = op.Start(runCtx)
			switch {
			case !errors.Is(err, sim.ErrUnusableState):
				t.Fatalf("Start = %v, want an ErrUnusableState", err)
			case !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "kubectl delete configmap -n default "+cm.Name):
				t.Fatalf("Start = %v, want it to say %q and how to fix it", err, tc.want)
			}
			var after corev1.ConfigMap
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(&cm), &after); err != nil {
				t.Fatal(err)
			}
			if after.ResourceVersion != cm.ResourceVersion {
				t.Fatal("the ConfigMap was written")
			}
		})
	}
}
