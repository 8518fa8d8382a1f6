package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/operator"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
	"github.com/openkarpenter/karpenter/pkg/test/harness"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// TestControllerBinary runs `karpenter controller --cloud-provider sim` as a user would, against
// a real API server: a pending pod gets a NodeClaim, the claim an instance and a Node, and the
// Node initializes; /healthz answers; SIGTERM stops it cleanly.
func TestControllerBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "karpenter")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building karpenter: %v\n%s", err, out)
	}
	kubeconfig, err := env.KubeconfigFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	health := harness.FreePort(t)
	cmd := exec.Command(bin, "controller", "--kubeconfig", kubeconfig, "--metrics-bind-address", "0",
		"--sim-launch-latency", "100ms", "--sim-ready-delay", "100ms",
		"--batch-idle-duration", "200ms", "--batch-max-duration", "1s")
	// Karpenter's names for these settings work as they are, and the settings of Karpenter
	// v1.15's chart are accepted (the AWS ones validated with the simulated cloud too).
	cmd.Env = append(os.Environ(), "DISABLE_LEADER_ELECTION=true", fmt.Sprintf("HEALTH_PROBE_PORT=%d", health),
		"CPU_REQUESTS=2000", "DISABLE_CONTROLLER_WARMUP=false", "KARPENTER_SERVICE=karpenter", "LEGACY_NODE_REPAIR=true",
		"DISABLE_DRY_RUN=true", "EKS_CONTROL_PLANE=false", "AMI_REFRESH_INTERVAL=5m", "SUBNET_REFRESH_INTERVAL=2m",
		"SECURITY_GROUP_REFRESH_INTERVAL=1m")
	logs, err := os.Create(filepath.Join(dir, "controller.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			data, _ := os.ReadFile(logs.Name())
			t.Logf("controller log:\n%s", data)
		}
	}()
	ctx := context.Background()
	nodeClass := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			Role: "KarpenterNodeRole", AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "bin"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "bin"}}},
		},
	}
	nodePool := builders.NodePool(builders.NodePoolOptions{})
	pod := builders.Pod(builders.PodOptions{Name: "waiting", CPU: "1", Memory: "1Gi"})
	status := pod.Status
	pod.UID, pod.Status = "", corev1.PodStatus{}
	if err := env.Client.Create(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, nodePool); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = status // as the kube-scheduler would: PodScheduled=False, Unschedulable
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var claims karpv1.NodeClaimList
		if err := env.Client.List(ctx, &claims); err != nil {
			t.Fatal(err)
		}
		if len(claims.Items) == 1 && meta.IsStatusConditionTrue(claims.Items[0].Status.Conditions, karpv1.ConditionTypeInitialized) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no initialized NodeClaim after 60s: %d claims", len(claims.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
	var nodes corev1.NodeList
	if err := env.Client.List(ctx, &nodes); err != nil || len(nodes.Items) != 1 {
		t.Fatalf("nodes: %d (%v)", len(nodes.Items), err)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", health))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("controller exited with %v after SIGTERM", err)
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("controller did not stop within 15s of SIGTERM")
	}
}

func TestControllerRejectsBadSettings(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "karpenter")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building karpenter: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "controller", "--cloud-provider", "gcp", "--batch-idle-duration", "0s")
	cmd.Env = append(os.Environ(), "KUBE_CLIENT_QPS=fast")
	out, err := cmd.CombinedOutput()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != exitCodeUsage {
		t.Fatalf("want exit code %d, got %v\n%s", exitCodeUsage, err, out)
	}
	if want := "KUBE_CLIENT_QPS"; !strings.Contains(string(out), want) {
		t.Errorf("output does not name %s:\n%s", want, out)
	}

	// Each simulated-cloud fault setting out of range is named, by flag and environment
	// variable alike.
	cmd = exec.Command(bin, "controller", "--sim-launch-error-rate", "1.5", "--sim-api-throttle-rate", "-0.1",
		"--sim-launch-jitter", "-2s", "--sim-instance-loss-rate", "NaN")
	out, err = cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != exitCodeUsage {
		t.Errorf("bad fault settings: want exit code %d, got %v\n%s", exitCodeUsage, err, out)
	}
	for _, want := range []string{"--sim-launch-error-rate (SIM_LAUNCH_ERROR_RATE) 1.5", "--sim-api-throttle-rate (SIM_API_THROTTLE_RATE) -0.1",
		"--sim-launch-jitter (SIM_LAUNCH_JITTER) -2s", "--sim-instance-loss-rate (SIM_INSTANCE_LOSS_RATE) NaN"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not name %q:\n%s", want, out)
		}
	}
	cmd = exec.Command(bin, "controller")
	cmd.Env = append(os.Environ(), "SIM_API_THROTTLE_RATE=often")
	out, err = cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != exitCodeUsage || !strings.Contains(string(out), "SIM_API_THROTTLE_RATE") {
		t.Errorf("SIM_API_THROTTLE_RATE=often: want exit code %d naming SIM_API_THROTTLE_RATE, got %v\n%s", exitCodeUsage, err, out)
	}

	// Karpenter v1.15's bounds: refresh intervals of at least a minute (AWS options.go
	// Validate). A CPU request of zero is Karpenter's default, as there.
	cmd = exec.Command(bin, "controller", "--cloud-provider", "aws", "--cluster-name", "c")
	cmd.Env = append(os.Environ(), "CPU_REQUESTS=0", "AMI_REFRESH_INTERVAL=30s", "SECURITY_GROUP_REFRESH_INTERVAL=0s")
	out, err = cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != exitCodeUsage {
		t.Errorf("short refresh intervals: want exit code %d, got %v\n%s", exitCodeUsage, err, out)
	}
	if strings.Contains(string(out), "CPU_REQUESTS") {
		t.Errorf("CPU_REQUESTS=0 refused, while Karpenter takes it for its default:\n%s", out)
	}
	for _, want := range []string{"--ami-refresh-interval (AMI_REFRESH_INTERVAL) 30s",
		"--security-group-refresh-interval (SECURITY_GROUP_REFRESH_INTERVAL) 0s"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not name %q:\n%s", want, out)
		}
	}

	cmd = exec.Command(bin, "controller")
	cmd.Env = append(os.Environ(), "METRICS_PORT=70000")
	out, err = cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != exitCodeUsage || !strings.Contains(string(out), "METRICS_PORT") {
		t.Errorf("METRICS_PORT=70000: want exit code %d naming METRICS_PORT, got %v\n%s", exitCodeUsage, err, out)
	}
}

func TestSimulateCommand(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "karpenter")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building karpenter: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "simulate", "../../examples/web.yaml").CombinedOutput()
	if err != nil {
		t.Fatalf("simulate examples/web.yaml: %v\n%s", err, out)
	}
	for _, want := range []string{"Cost", "Nodes", "Pending", "Nodes launched by instance type"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: bad\nduration: 1h\ntimeline:\n  - at: 0s\n    scale: {name: ghost, replicas: -1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(bin, "simulate", bad).CombinedOutput()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != exitCodeUsage {
		t.Fatalf("want exit code %d for a bad workload, got %v\n%s", exitCodeUsage, err, out)
	}
	for _, want := range []string{"bad.yaml:4: timeline[0].scale.name", "bad.yaml:4: timeline[0].scale.replicas: -1 is negative", "manifests: no NodePool"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("error output lacks %q:\n%s", want, out)
		}
	}
	// A scheduler configuration the kube-scheduler would refuse, or one with --from-cluster.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"../../examples/web.yaml", "--scheduler-config", "podTopologySpread: {defaultConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}"},
			"--scheduler-config: podTopologySpread.defaultConstraints[0].maxSkew 0: must be greater than 0"},
		{[]string{"--from-cluster=../../examples/cluster/cluster-dump.yaml", "--scheduler-config", "podTopologySpread: {}"}, "--scheduler-config: only with a workload file or manifests"},
	} {
		out, err := exec.Command(bin, append([]string{"simulate"}, tc.args...)...).CombinedOutput()
		if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != exitCodeUsage || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: want exit code %d saying %q, got %v\n%s", tc.args, exitCodeUsage, tc.want, err, out)
		}
	}
}

// TestControllerRefusesFeatureGates: a gate whose feature is not built, turned on, stops the
// controller before it does anything (it would otherwise fail on the missing kubeconfig), with
// exit code 2 and a message naming the gate; an unknown gate does not.
func TestControllerRefusesFeatureGates(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "karpenter")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building karpenter: %v\n%s", err, out)
	}
	missing := filepath.Join(dir, "no-such-kubeconfig")
	for _, tc := range []struct {
		args, env []string
		want      []string
	}{
		// Karpenter v1.15's settings whose feature is not built here, set away from its default.
		// A scheduler configuration the kube-scheduler would refuse, or with a field it lacks.
		{env: []string{"SCHEDULER_CONFIG=podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]}"},
			want: []string{"SCHEDULER_CONFIG", "podTopologySpread.defaultConstraints[0].labelSelector: must not be set"}},
		{env: []string{"SCHEDULER_CONFIG=podTopologySpread: {defaultConstraint: []}"}, want: []string{"SCHEDULER_CONFIG", `unknown field "defaultConstraint"`}},
		{env: []string{"IGNORE_DRA_REQUESTS=false"}, want: []string{"IGNORE_DRA_REQUESTS", "not built here"}},
		// ARC zonal shifts are AWS's: refused on the simulated cloud.
		{args: []string{"--enable-zonal-shift"}, want: []string{"ENABLE_ZONAL_SHIFT", "the simulated cloud has none"}},
	} {
		cmd := exec.Command(bin, append([]string{"controller", "--kubeconfig", missing}, tc.args...)...)
		cmd.Env = append(os.Environ(), tc.env...)
		out, err := cmd.CombinedOutput()
		if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != exitCodeUsage {
			t.Errorf("%v %v: want exit code %d, got %v\n%s", tc.env, tc.args, exitCodeUsage, err, out)
			continue
		}
		for _, want := range tc.want {
			if !strings.Contains(string(out), want) {
				t.Errorf("%v %v: output does not say %q:\n%s", tc.env, tc.args, want, out)
			}
		}
		if strings.Contains(string(out), "kubeconfig") {
			t.Errorf("%v %v: the controller went on to load its kubeconfig:\n%s", tc.env, tc.args, out)
		}
	}
	// Karpenter's defaults start: ReservedCapacity is on by default, and the chart's rendering of
	// the defaults (AWS provider v1.15.2's) passes the gates and fails only later, on the
	// missing kubeconfig. A gate name neither table knows is logged and ignored, as Karpenter
	// (ParseFeatureGates) ignores it.
	cmd := exec.Command(bin, "controller", "--kubeconfig", missing, "--ignore-dra-requests=true", "--enable-zonal-shift=false",
		"--scheduler-config", "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}",
		"--feature-gates", "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false,Drift=true",
		"--aws-feature-gates", "NodeClassCEL=false,DRANVIDIAGPU=false,DRAEFA=false,RebootForRepair=false")
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || !strings.Contains(string(out), "loading kubeconfig") {
		t.Errorf("the default gates: want exit code 1 on the missing kubeconfig, got %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ignoring a feature gate") || !strings.Contains(string(out), `"gate":"Drift"`) {
		t.Errorf("the unknown gate Drift was not logged as ignored:\n%s", out)
	}
}

// TestApplyFeatureGates: the gates that work here reach the operator's options.
func TestApplyFeatureGates(t *testing.T) {
	for _, tc := range []struct {
		gates                   string
		spotToSpot, staticPools bool
	}{
		{"", false, false},
		{"SpotToSpotConsolidation=true", true, false},
		{"StaticCapacity=true,ReservedCapacity=false", false, true},
		{"SpotToSpotConsolidation=true,StaticCapacity=true", true, true},
	} {
		opts := operator.DefaultOptions()
		opts.SpotToSpotConsolidation, opts.StaticCapacity = !tc.spotToSpot, !tc.staticPools
		if _, err := applyFeatureGates(&opts, tc.gates, ""); err != nil {
			t.Errorf("%q: %v", tc.gates, err)
			continue
		}
		if opts.SpotToSpotConsolidation != tc.spotToSpot || opts.StaticCapacity != tc.staticPools {
			t.Errorf("%q: SpotToSpotConsolidation=%t StaticCapacity=%t, want %t and %t", tc.gates, opts.SpotToSpotConsolidation, opts.StaticCapacity, tc.spotToSpot, tc.staticPools)
		}
	}
	for gates, want := range map[string]bool{"": false, "NodeRepair=true": true, "NodeRepair=false": false} {
		opts := operator.DefaultOptions()
		opts.NodeRepair = !want
		if _, err := applyFeatureGates(&opts, gates, ""); err != nil || opts.NodeRepair != want {
			t.Errorf("%q: NodeRepair=%t (%v), want %t", gates, opts.NodeRepair, err, want)
		}
	}
	// The AWS provider's NodeClassCEL, from AWS_FEATURE_GATES.
	for gates, want := range map[string]bool{"": false, "NodeClassCEL=true": true, "NodeClassCEL=false": false} {
		opts := operator.DefaultOptions()
		opts.NodeClassCEL = !want
		if _, err := applyFeatureGates(&opts, "", gates); err != nil || opts.NodeClassCEL != want {
			t.Errorf("AWS %q: NodeClassCEL=%t (%v), want %t", gates, opts.NodeClassCEL, err, want)
		}
	}
}

// TestLogOutputPaths: LOG_OUTPUT_PATHS sends the log lines to every destination given; an
// empty list or a path that cannot be opened is an error naming the setting.
func TestLogOutputPaths(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	logger, err := newLogger(zapcore.InfoLevel, a+","+b, "stderr")
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("to both files", "key", "value")
	logger.V(1).Info("debug, below the level")
	for _, path := range []string{a, b} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), `"to both files"`) || !strings.Contains(string(data), `"key":"value"`) || strings.Contains(string(data), "below the level") {
			t.Errorf("%s: %s", filepath.Base(path), data)
		}
	}
	if _, err := newLogger(zapcore.InfoLevel, " , ", "stderr"); err == nil || !strings.Contains(err.Error(), "LOG_OUTPUT_PATHS") {
		t.Errorf("empty output paths: %v, want an error naming LOG_OUTPUT_PATHS", err)
	}
	if _, err := newLogger(zapcore.InfoLevel, "stdout", filepath.Join(dir, "no", "such", "dir", "e.log")); err == nil || !strings.Contains(err.Error(), "LOG_ERROR_OUTPUT_PATHS") {
		t.Errorf("an unopenable error output path: %v, want an error naming LOG_ERROR_OUTPUT_PATHS", err)
	}
}
