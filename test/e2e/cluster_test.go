//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/test/controlplane"
)

// cluster is the control plane every test shares, with the karpenter binary under test.
type cluster struct {
	*controlplane.ControlPlane
	env        *apiserver.Env
	dir        string // logs, kubeconfig, binaries
	kubeconfig string
	karpenter  string // the binary under test
}

// process is a binary the suite runs, logging to a file.
type process = controlplane.Process

var cp *cluster

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	c, err := startCluster()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		if c != nil {
			c.Stop(os.Getenv("E2E_KEEP") != "")
		}
		return 1
	}
	cp = c
	code := m.Run()
	c.Stop(os.Getenv("E2E_KEEP") != "")
	return code
}

// startCluster starts the control plane (package controlplane: etcd and kube-apiserver with the
// project's CRDs, kube-controller-manager and kube-scheduler) and builds the karpenter binary.
func startCluster() (*cluster, error) {
	plane, err := controlplane.Start(controlplane.Options{})
	if plane == nil {
		return nil, err
	}
	c := &cluster{ControlPlane: plane, env: plane.Env, dir: plane.Dir, kubeconfig: plane.Kubeconfig}
	if err != nil {
		return c, err
	}
	build := exec.Command("go", "build", "-o", filepath.Join(c.dir, "karpenter"), "./cmd/karpenter")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		return c, fmt.Errorf("building karpenter: %v\n%s", err, out)
	}
	c.karpenter = filepath.Join(c.dir, "karpenter")
	return c, nil
}

// kubectl runs kubectl against the cluster and fails the test on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := cp.kubectlOutput(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// kubectlApply applies manifests given as text.
func kubectlApply(t *testing.T, manifests string) {
	t.Helper()
	if err := cp.Apply(manifests); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) kubectlOutput(args ...string) (string, error) { return c.Kubectl(args...) }

// apiServerProcess finds the kube-apiserver envtest started for the suite (the one serving
// cp.env.Config.Host, as other suites may run beside this one) and returns its pid and command
// line.
func (c *cluster) apiServerProcess() (int, []string, error) {
	u, err := url.Parse(c.env.Config.Host)
	if err != nil {
		return 0, nil, err
	}
	want := "--secure-port=" + u.Port()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(argv[0]) == "kube-apiserver" && slices.Contains(argv, want) {
			return pid, argv, nil
		}
	}
	return 0, nil, fmt.Errorf("no kube-apiserver with %s is running", want)
}

// killAPIServer ends the suite's kube-apiserver with SIGKILL, as a crashed control-plane node
// would, and returns its command line, for restartAPIServer.
func (c *cluster) killAPIServer() ([]string, error) {
	pid, argv, err := c.apiServerProcess()
	if err != nil {
		return nil, err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("killing kube-apiserver %d: %w", pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/cmdline", pid)); os.IsNotExist(err) {
			break
		}
		if raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); strings.Contains(string(raw), ") Z ") {
			break // a zombie until envtest reaps it: dead all the same
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("kube-apiserver %d still runs 10s after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return argv, nil
}

// startAPIServer runs a kube-apiserver with the command line argv (its flags replaced by
// override, "--name=value" each), as the suite's process named name, and waits until it
// answers /readyz; it returns when it first did.
func (c *cluster) startAPIServer(name string, argv []string, override ...string) (*process, time.Time, error) {
	args := slices.Clone(argv[1:])
	for _, o := range override {
		flag, _, _ := strings.Cut(o, "=")
		args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, flag+"=") })
		args = append(args, o)
	}
	p, err := c.Run(name, argv[0], args...)
	if err != nil {
		return nil, time.Time{}, err
	}
	port := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--secure-port="); ok {
			port = v
		}
	}
	cfg := rest.CopyConfig(c.env.Config)
	cfg.Host = "https://127.0.0.1:" + port
	cfg.Timeout = 2 * time.Second
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return p, time.Time{}, err
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		body, err := kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			return p, time.Now(), nil
		}
		if p.Exited() {
			return p, time.Time{}, fmt.Errorf("%s exited:\n%s", name, p.Tail())
		}
		if time.Now().After(deadline) {
			return p, time.Time{}, fmt.Errorf("%s not ready within 2 minutes: %v\n%s", name, err, p.Tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
