package differential_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/openkarpenter/karpenter/pkg/test/controlplane"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

// Both controllers batch pods as Karpenter does by default, and their nodes take the same time
// from launch to Ready: ours launches in ourLaunchLatency and its kubelet is Ready
// ourReadyDelay later; upstream's KWOK provider creates the Node after upstreamRegistration,
// which KWOK initializes at once.
const (
	batchIdle            = "1s"
	batchMax             = "10s"
	ourLaunchLatency     = "2s"
	ourReadyDelay        = "1s"
	upstreamRegistration = "3s"
)

// controller is one side of the comparison: how its control plane is made, its node class,
// and how it starts.
type controller struct {
	name string
	// crdFiles are the CRDs its control plane installs; nil means the project's.
	crdFiles func() []string
	// disabledControllers are the kube-controller-manager controllers left off.
	disabledControllers []string
	// nodeClass is the manifest of the node class named "default", and nodeClassRef its
	// reference in a NodePool's template, as YAML flow mappings.
	nodeClass, nodeClassRef string
	// start runs the controller against the control plane; Stop ends it.
	start func(t *testing.T, plane *controlplane.ControlPlane)
}

// ours is this project's controller with its simulated cloud.
var ours = controller{
	name: "ours",
	nodeClass: `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole-differential
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: differential}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: differential}}]
  amiSelectorTerms: [{alias: al2023@latest}]
`,
	nodeClassRef: "{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}",
	start: func(t *testing.T, plane *controlplane.ControlPlane) {
		metrics, health := harness.FreePort(t), harness.FreePort(t)
		p, err := plane.Run("karpenter", shared.ours, "controller",
			"--kubeconfig", plane.Kubeconfig, "--cloud-provider", "sim", "--cluster-name", "differential",
			"--leader-elect=false", "--sim-launch-latency", ourLaunchLatency, "--sim-ready-delay", ourReadyDelay,
			"--batch-idle-duration", batchIdle, "--batch-max-duration", batchMax, "--log-level", "debug",
			"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metrics),
			"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", health))
		if err != nil {
			t.Fatal(err)
		}
		waitHealthy(t, p, fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
	},
}

// upstream is Karpenter v1.15.0's controller with its KWOK cloud provider, and the KWOK
// controller, which runs nodelifecycle's part: its nodes heartbeat, so the control plane runs
// the node lifecycle controller, which lifts the not-ready taint.
var upstream = controller{
	name:                "karpenter",
	crdFiles:            func() []string { return shared.upstreamCRDs },
	disabledControllers: []string{"serviceaccount-token", "nodeipam", "cloud-node-lifecycle"},
	nodeClass: `apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata:
  name: default
spec:
  nodeRegistrationDelay: ` + upstreamRegistration + `
`,
	nodeClassRef: "{group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}",
	start: func(t *testing.T, plane *controlplane.ControlPlane) {
		if _, err := plane.Run("kwok", shared.kwok,
			"--kubeconfig", plane.Kubeconfig,
			"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--node-lease-duration-seconds=40", "--config", shared.kwokStages); err != nil {
			t.Fatal(err)
		}
		metrics, health := harness.FreePort(t), harness.FreePort(t)
		p, err := plane.RunWithEnv("karpenter", []string{
			"KUBECONFIG=" + plane.Kubeconfig,
			"DISABLE_LEADER_ELECTION=true",
			fmt.Sprintf("METRICS_PORT=%d", metrics),
			fmt.Sprintf("HEALTH_PROBE_PORT=%d", health),
			"INSTANCE_TYPES_FILE_PATH=" + shared.instanceTypes,
			"BATCH_IDLE_DURATION=" + batchIdle,
			"BATCH_MAX_DURATION=" + batchMax,
			"LOG_LEVEL=debug",
		}, shared.upstream)
		if err != nil {
			t.Fatal(err)
		}
		waitHealthy(t, p, fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
	},
}

// waitHealthy waits for a controller's readiness endpoint, failing the test if it exits first.
func waitHealthy(t *testing.T, p *controlplane.Process, url string) {
	t.Helper()
	harness.Eventually(t, time.Minute, p.Name+" ready", func() (bool, string) {
		if p.Exited() {
			t.Fatalf("%s exited:\n%s", p.Name, p.Tail())
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}
